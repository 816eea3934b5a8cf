// A toy web service: one instance per emulated VM. Real impact stops it (Freeze) or restarts it
// (Reboot), as the VM it stands for would be.
//   node service.mjs PORT NAME
import { createServer } from 'node:http';

const [port, name] = process.argv.slice(2);
const server = createServer((_req, res) => res.end(`ok from ${name}\n`));
server.listen(Number(port), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
