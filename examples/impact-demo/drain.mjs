// The agent's exec action: take one backend out of the balancer (drain) or put it back (undrain).
//   node drain.mjs BALANCER_URL BACKEND drain|undrain
const [url, backend, verb] = process.argv.slice(2);
const res = await fetch(`${url}/${verb}?backend=${encodeURIComponent(backend)}`, { method: 'POST' });
if (!res.ok) {
  console.error(`${verb} ${backend}: HTTP ${res.status}`);
  process.exit(1);
}
console.log(`${verb}ed ${backend}`);
