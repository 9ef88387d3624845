// Runs a built site's generated Cloudflare Worker (<site>/hosts/cloudflare/worker.js) in
// workerd, through the miniflare package, as `catalogue serve --server cloudflare` does,
// with the write service bound as WRITE_SERVICE.
//
// The Worker's static assets (env.ASSETS) are the directory wrangler uploads
// (<site>/hosts/cloudflare/assets/, links to the published generation's served directories),
// read through workerd's own disk service by a small file worker that answers as the assets
// binding does (the file, its ETag, 404 when there is none). Each request goes through
// <site>/current afresh, so a rebuild is served at once, as a new deployment is on
// Cloudflare; miniflare's own assets would list the files once, when the Worker starts. A
// record the write service accepted and no build has published yet is read from
// <site>/.accepted/, as the other local servers do.
// Usage: node workerd.mjs '{"packages" (the directory whose node_modules/ holds miniflare), "site",
//                            "worker", "assets", "accepted", "host", "port", "writeService",
//                            "writeTimeout" (seconds, a string), "compatibilityDate"}'
import { createRequire } from "node:module";
import path from "node:path";

const given = JSON.parse(process.argv[2]);
// (from wherever the packages were installed: the checkout's, or the user's cache)
const { Miniflare } = createRequire(path.join(given.packages, "package.json"))("miniflare");

// Static assets' answer for a file: its bytes with an ETag, here nginx's (mtime-size in hex).
const FILES = `export default {
  async fetch(request, env) {
    const key = new URL(request.url).pathname;
    let found = await env.DISK.fetch(new Request("http://disk/${given.assets}" + key));
    if (found.status !== 200) {  // a record the write service accepted, not published yet
      found = await env.ACCEPTED.fetch(new Request("http://disk" + key));
    }
    if (found.status !== 200) return new Response(null, {status: 404});
    const modified = found.headers.get("Last-Modified");
    const tag = (Date.parse(modified) / 1000).toString(16) + "-" + Number(found.headers.get("Content-Length")).toString(16);
    return new Response(found.body, {headers: {"Content-Type": "application/json", "ETag": '"' + tag + '"',
                                               "Last-Modified": modified}});
  }
};`;

let worker = null;
async function stop() {
  // (a stop asked for is a clean exit; workerd gets 5 s to close, then goes with this process)
  if (worker !== null) await Promise.race([worker.dispose(), new Promise((done) => setTimeout(done, 5000))]);
  process.exit(0);
}

function listen() {
  // Ours alone: miniflare's own handlers exit with 128 + the signal.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.removeAllListeners(signal);
    process.on(signal, stop);
  }
}

listen();  // (a signal while workerd starts stops it too)
worker = new Miniflare({
  host: given.host,
  port: given.port,
  compatibilityDate: given.compatibilityDate,
  workers: [
    {
      name: "catalogue",
      modules: true,
      scriptPath: given.worker,
      modulesRoot: path.dirname(given.worker), // (module names are relative to it, and may not climb out)
      serviceBindings: { ASSETS: "files" },
      bindings: { WRITE_SERVICE: given.writeService, WRITE_TIMEOUT: given.writeTimeout },
    },
    {
      name: "files",
      modules: true,
      script: FILES,
      serviceBindings: {
        DISK: { disk: { path: given.site, writable: false } },
        ACCEPTED: { disk: { path: path.join(given.site, given.accepted), writable: false } }, // (a dot directory)
      },
    },
  ],
});
listen();
await worker.ready;
