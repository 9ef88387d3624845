// Runs a built site's Netlify Edge Function (<site>/hosts/netlify/edge-functions/catalogue.js)
// in Deno, Netlify's runtime, as `catalogue serve --server netlify` does. Deno.serve hands
// every request to the function, as netlify.toml declares it on every path; when the function
// steps aside (its own read of a file, marked with the key), the file is served as Netlify
// serves a deploy's static files: the published generation's, its bytes with Content-Type,
// Content-Length and Last-Modified, a 404 for anything else. Each read opens <site>/current
// afresh, so a rebuild is served at once, as a new deploy is. A record the write service
// accepted and no build has published yet is read from <site>/.accepted/, as the other
// local servers do.
// Usage: deno run --allow-net=... --allow-read=SITE netlify.mjs '{"site", "current", "accepted",
//                                                                "function" (its file: URL), "host", "port", "env"}'
const given = JSON.parse(Deno.args[0]);
const TYPES = {".json": "application/json", ".html": "text/html; charset=utf-8", ".gz": "application/gzip"};
const STATE = ".state";  // never deployed (docs/deploying.md: Netlify)

// Netlify's global: the site's environment variables (here, those `catalogue serve` gives).
globalThis.Netlify = {env: {get: (name) => given.env[name]}};
const edge = (await import(given.function)).default;
// The function reads files with fetch() of its request's own URL: always this server, here.
const self = `http://${given.host === "0.0.0.0" ? "127.0.0.1" : given.host}:${given.port}`;

async function found(key) {
  // A published file, or (not published yet) an accepted one: [bytes, mtime] or null.
  const segments = key.split("/");
  if (segments.some((s) => s === "" || s === "." || s === "..") || segments[0] === STATE) return null;
  for (const root of [`${given.site}/${given.current}`, `${given.site}/${given.accepted}`]) {
    try {
      const file = `${root}/${key}`;
      const info = await Deno.stat(file);
      if (info.isFile) return [await Deno.readFile(file), info.mtime];
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory)) throw error;
    }
  }
  return null;
}

async function staticFile(request) {
  const url = new URL(request.url);
  let key = null;
  try {
    key = decodeURIComponent(url.pathname.substring(1));
  } catch (error) {
    // (not UTF-8: no such file)
  }
  const file = key === null || (request.method !== "GET" && request.method !== "HEAD") ? null : await found(key);
  if (file === null) return new Response("Not Found", {status: 404, headers: {"Content-Type": "text/plain"}});
  const [bytes, modified] = file;
  const dot = key.lastIndexOf(".");
  return new Response(request.method === "HEAD" ? null : bytes, {headers: {
    "Content-Type": TYPES[key.substring(dot)] || "application/octet-stream", "Content-Length": String(bytes.length),
    "Last-Modified": modified.toUTCString()}});
}

function addressed(request) {
  // The request at this server's own address. (fetch's Request refuses TRACE: then what the
  // function reads of a request, as it arrives.) Its parts named one by one: a Request as the
  // init would be read for its signal too, which made Deno print a notice of its legacy abort
  // behaviour on every start.
  const url = new URL(request.url);
  const parts = {method: request.method, headers: request.headers, body: request.body};
  const here = self + url.pathname + url.search;
  try {
    return new Request(here, parts);
  } catch (error) {
    return {...parts, url: here};
  }
}

Deno.serve({hostname: given.host, port: given.port, onListen() {}}, async (request) => {
  const here = addressed(request);
  const answer = await edge(here, {next: () => staticFile(here)});
  return answer === undefined ? staticFile(here) : answer;  // (undefined: Netlify serves the file)
});

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  // (a stop asked for is a clean exit)
  Deno.addSignalListener(signal, () => Deno.exit(0));
}
