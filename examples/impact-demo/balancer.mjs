// A toy load balancer in front of the services: round robin over the backends not drained, and an
// admin route the agent's drain action calls. A backend that does not answer within 500 ms costs
// the request: that is the loss the demo counts.
import { createServer, request } from 'node:http';

export async function startBalancer(backends) {
  const drained = new Set();
  let next = 0;
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (req.method === 'POST' && (url.pathname === '/drain' || url.pathname === '/undrain')) {
      const name = url.searchParams.get('backend');
      if (!backends.some((b) => b.name === name)) return res.writeHead(404).end();
      if (url.pathname === '/drain') drained.add(name);
      else drained.delete(name);
      return res.end('ok\n');
    }
    const live = backends.filter((b) => !drained.has(b.name));
    if (live.length === 0) return res.writeHead(503).end('no backend\n');
    const backend = live[next++ % live.length];
    const upstream = request({ host: '127.0.0.1', port: backend.port, path: req.url, timeout: 500 }, (answer) => {
      res.writeHead(answer.statusCode ?? 502);
      answer.pipe(res);
    });
    upstream.on('timeout', () => upstream.destroy(new Error('timeout')));
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end('backend failed\n');
    });
    upstream.end();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, drained, close: () => new Promise((r) => server.close(r)) };
}
