import { Miniflare } from "miniflare";
const mf = new Miniflare({modules: true, script: `export default {async fetch(req, env){ const u = new URL(req.url); const r = await env.FILES.fetch(new Request("http://files/" + u.searchParams.get("f"), {headers: req.headers})); return new Response(r.body, {status: r.status, headers: r.headers}); }}`,
  serviceBindings: {FILES: {disk: {path: process.argv[2], writable: false}}},
  compatibilityDate: "2025-09-01", port: 8787});
const url = await mf.ready;
console.log(url.href);
await new Promise(r => setTimeout(r, 30000));
await mf.dispose();
