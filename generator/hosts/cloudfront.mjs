// Runs a built site's CloudFront host here, as `catalogue serve --server cloudfront` does: a
// Node HTTP server in CloudFront's place, the published generation in the bucket's.
//
// Each request goes as CloudFront takes it: the cache behaviour of the viewer's path; the
// viewer-request event, given to <site>/hosts/cloudfront/function.js run in a bare context
// (no require, no module), as CloudFront Functions run it; then the function's own answer,
// or the origin. Where the behaviour calls the pages' handler, the origin-request event goes
// to <site>/hosts/cloudfront/pages.mjs, its objects read from the published files rather
// than S3 (readFrom); what it passes on, and everything elsewhere, is the object as S3
// answers it (its bytes, an MD5 ETag, Last-Modified; a missing one is S3's 403), given to
// the same handler as the origin-response event, as every behaviour calls it. On the
// origin's answer, what CloudFront does: gzip or brotli for a viewer that takes it, the
// behaviour's response headers policy, 304 for the viewer's validators. Nothing is cached.
//
// Each request reads <site>/current: a generation not served yet is first deployed, as a
// deploy publishes one, with its own function (the counts), made by the command `deploy`.
// Usage: node cloudfront.mjs '{"site", "current", "function", "pages", "host", "port",
//                              "deploy", "generation", "distribution"}'
import {execFile} from "node:child_process";
import {createHash, randomUUID} from "node:crypto";
import {readFile, realpath, stat} from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import {pathToFileURL} from "node:url";
import {promisify} from "node:util";
import vm from "node:vm";
import zlib from "node:zlib";

const given = JSON.parse(process.argv[2]);
const site = await realpath(given.site);  // (as the generations' paths are given: links resolved)
const DISTRIBUTION = {distributionDomainName: "local.cloudfront.net", distributionId: "LOCAL"};
const BUCKET_DOMAIN = "catalogue.s3.us-east-1.amazonaws.com";  // (the handler's reader ignores it here)
const STATE = ".state";  // never deployed: not in the bucket
const COMPRESSIBLE = new Set(["application/json", "text/html"]);  // of CloudFront's list, what the site has
const COMPRESSED_SIZES = [1000, 10000000];  // bytes CloudFront compresses, from and to
const ACCESS_DENIED = '<?xml version="1.0" encoding="UTF-8"?>\n'
  + "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>";  // S3's body
const STATUS_TEXT = {403: "Forbidden"};  // (S3's reason phrase of each status the bucket answers)

// ---- the deployed generation ------------------------------------------------------------

let served = null;  // {generation, distribution, viewer, pages}
let deploying = null;
let loads = 0;

async function deployed() {
  // The generation to serve and its code: the one last deployed, or the one now published.
  // (A generation replaced while it deploys may be gone before its files are read, builds
  // keeping two: then the one published since is deployed.)
  for (let attempt = 1; ; attempt++) {
    const now = await realpath(path.join(site, given.current));
    if (served.generation === now) return served;
    if (deploying === null) {
      deploying = (async () => {
        served = await load(await deploy());
        return served;
      })().finally(() => {
        deploying = null;
      });
    }
    try {
      return await deploying;
    } catch (error) {
      if (attempt >= 5 || await realpath(path.join(site, given.current)) === now) throw error;
    }
  }
}

async function deploy() {
  const [command, ...args] = given.deploy;
  const {stdout} = await promisify(execFile)(command, args, {maxBuffer: 1 << 20});
  return JSON.parse(stdout);
}

async function load(deployment) {
  // The function in a context of its own, as CloudFront runs it; the handler as a module
  // (loaded afresh: a deploy may have changed it), reading the site's files.
  const viewer = vm.createContext({});
  vm.runInContext(await readFile(given.function, "utf8"), viewer);
  const pages = await import(pathToFileURL(given.pages).href + "?load=" + ++loads);
  pages.readFrom((origin) => reader(path.join(site, origin.s3.path)));
  return {generation: deployment.generation, distribution: deployment.distribution, viewer, pages};
}

// ---- the bucket ---------------------------------------------------------------------------

async function stored(root, key) {
  // An object of the bucket holding the generation at root: {bytes, modified}, or null.
  const segments = key.split("/");
  if (segments.some((s) => s === "" || s === "." || s === "..") || segments[0] === STATE) return null;
  const file = path.join(root, key);
  try {
    const found = await stat(file);
    if (!found.isFile()) return null;
    return {bytes: await readFile(file), modified: found.mtime};
  } catch (error) {
    if (error.code === "ENOENT" || error.code === "ENOTDIR") return null;
    throw error;
  }
}

function reader(root) {
  // The handler's objects, here: as GetObject gives them.
  return async (key) => {
    const found = await stored(root, key);
    return found === null ? null : {bytes: new Uint8Array(found.bytes), modified: found.modified.toUTCString()};
  };
}

async function object(state, uri) {
  // S3's answer for the object at uri: the object as deployed, or for a missing one the
  // 403 S3 answers when the distribution may not list the bucket.
  let key = null;
  try {
    key = decodeURIComponent(uri.substring(1));
  } catch (error) {
    // (not UTF-8: no key)
  }
  const found = key === null ? null : await stored(state.generation, key);
  const {htmlType, jsonType, cacheControl} = state.distribution;
  if (found === null) {
    return {status: 403, body: Buffer.from(ACCESS_DENIED),
            headers: {"content-type": "application/xml", "x-amz-request-id": randomUUID()}};
  }
  return {status: 200, body: found.bytes,
          headers: {"content-type": key.endsWith(".html") ? htmlType : jsonType, "cache-control": cacheControl,
                    "etag": '"' + createHash("md5").update(found.bytes).digest("hex") + '"',
                    "last-modified": found.modified.toUTCString(), "accept-ranges": "bytes"}};
}

// ---- the events ---------------------------------------------------------------------------

function viewerEvent(request) {
  // A viewer request as CloudFront gives it to a function: the path and each query value as
  // sent, a repeated name's values in multiValue, header names in lower case.
  const at = request.url.indexOf("?");
  const uri = at < 0 ? request.url : request.url.substring(0, at);
  const querystring = Object.create(null);
  for (const field of (at < 0 ? "" : request.url.substring(at + 1)).split("&")) {
    if (!field) continue;
    const equals = field.indexOf("=");
    add(querystring, equals < 0 ? field : field.substring(0, equals), equals < 0 ? "" : field.substring(equals + 1));
  }
  const headers = Object.create(null);
  for (let i = 0; i < request.rawHeaders.length; i += 2) {
    const name = request.rawHeaders[i].toLowerCase();
    if (name !== "cookie") add(headers, name, request.rawHeaders[i + 1]);  // (cookies go apart; none is read)
  }
  return {version: "1.0", context: {...DISTRIBUTION, eventType: "viewer-request", requestId: randomUUID()},
          viewer: {ip: request.socket.remoteAddress},
          request: {method: request.method, uri, querystring, headers, cookies: {}}};
}

function add(values, name, value) {
  if (!(name in values)) {
    values[name] = {value};
    return;
  }
  if (!values[name].multiValue) values[name].multiValue = [{value: values[name].value}];
  values[name].multiValue.push({value});
}

function edgeEvent(eventType, made) {
  // A Lambda@Edge event: its request, and for origin response the origin's response.
  return {Records: [{cf: {config: {...DISTRIBUTION, eventType, requestId: randomUUID()}, ...made}}]};
}

function originRequestOf(state, forwarded, viewer) {
  // The request as CloudFront sends it on to the origin, in Lambda@Edge's shape: the query
  // string (the cache policy forwards all of it), Accept-Encoding as the cache policy
  // normalises it, and the S3 origin, whose path is the deployed generation here.
  const headers = {host: [{key: "Host", value: BUCKET_DOMAIN}], "user-agent": [{key: "User-Agent", value: "Amazon CloudFront"}]};
  const accepted = viewer.headers["accept-encoding"] || "";
  const codings = [["br", state.distribution.acceptsBrotli], ["gzip", state.distribution.acceptsGzip]]
    .filter(([, pattern]) => accepts(pattern, accepted)).map(([coding]) => coding);
  if (codings.length) headers["accept-encoding"] = [{key: "Accept-Encoding", value: codings.join(",")}];
  const fields = [];
  for (const name in forwarded.querystring) {
    for (const {value} of forwarded.querystring[name].multiValue || [forwarded.querystring[name]]) fields.push(name + "=" + value);
  }
  return {clientIp: viewer.socket.remoteAddress, headers, method: forwarded.method, querystring: fields.join("&"),
          uri: forwarded.uri,
          origin: {s3: {authMethod: "none", customHeaders: {}, domainName: BUCKET_DOMAIN, region: "us-east-1",
                        path: "/" + path.relative(site, state.generation)}}};
}

async function originRequest(state, behaviour, forwarded, viewer) {
  // What the origin answers: the handler's page where the behaviour calls it on origin
  // request and it makes one, else the bucket's answer through the handler on origin response.
  let request = originRequestOf(state, forwarded, viewer);
  if (behaviour.pages) {
    const made = await state.pages.handler(edgeEvent("origin-request", {request}));
    if (made.status !== undefined) return generated(state, made);
    request = made;  // passed on to the bucket
  }
  const found = await object(state, request.uri);
  const response = {status: String(found.status), statusDescription: STATUS_TEXT[found.status] || "OK", headers: {}};
  for (const name of Object.keys(found.headers)) response.headers[name] = [{key: name, value: found.headers[name]}];
  const made = await state.pages.handler(edgeEvent("origin-response", {request, response}));
  return {...edgeAnswer(made).answer, ...(made.body === undefined ? {body: found.body} : {})};
}

function edgeAnswer(made) {
  // A Lambda@Edge response as an answer (one value a header), and its size as CloudFront counts it.
  const headers = {};
  let size = 0;
  for (const name of Object.keys(made.headers || {})) {
    headers[name] = made.headers[name].map((header) => header.value).join(", ");
    size += name.length + headers[name].length + 4;
  }
  const body = Buffer.from(made.body || "", made.bodyEncoding === "base64" ? "base64" : "utf8");
  size += Buffer.byteLength(made.body || "");
  return {answer: {status: Number(made.status), headers, body}, size};
}

function generated(state, made) {
  // A response the handler made on origin request, within what CloudFront takes of one.
  const {answer, size} = edgeAnswer(made);
  if (size > state.distribution.maxGenerated) {
    // (CloudFront refuses it: a validation error, 502)
    console.error(`the handler's response is ${size} bytes, over ${state.distribution.maxGenerated}`);
    return {status: 502, body: Buffer.from("502 ERROR: the Lambda function's response is too large.\n"),
            headers: {"content-type": "text/plain"}, final: true};
  }
  return answer;
}

// ---- what CloudFront does with the origin's answer ------------------------------------------

function accepts(pattern, accepted) {
  // A coding of Accept-Encoding named with no q, or a q above 0 (as every host reads it).
  const found = new RegExp(pattern, "i").exec(accepted);
  return found !== null && (found[1] === undefined || Number(found[1]) > 0);
}

function compress(answer, method, accepted, distribution) {
  // CloudFront's compression: brotli, else gzip, of a compressible type and size with no
  // Content-Encoding yet; a strong ETag made weak.
  const type = (answer.headers["content-type"] || "").split(";")[0].trim();
  const length = answer.body.length;
  if (method !== "GET" || answer.status !== 200 || answer.headers["content-encoding"] || !COMPRESSIBLE.has(type)
      || length < COMPRESSED_SIZES[0] || length > COMPRESSED_SIZES[1]) return answer;
  const coding = accepts(distribution.acceptsBrotli, accepted) ? "br"
    : accepts(distribution.acceptsGzip, accepted) ? "gzip" : null;
  if (coding === null) return answer;
  const headers = {...answer.headers, "content-encoding": coding};
  if (headers.etag !== undefined && headers.etag.startsWith('"')) headers.etag = "W/" + headers.etag;
  else if (headers.etag !== undefined && !headers.etag.startsWith("W/")) delete headers.etag;
  const body = coding === "br" ? zlib.brotliCompressSync(answer.body) : zlib.gzipSync(answer.body);
  return {...answer, headers, body};
}

function policy(answer, behaviour) {
  // The behaviour's response headers policy: each header set, or kept where it says so.
  for (const [name, value, override] of behaviour.headers) {
    const key = name.toLowerCase();
    if (override || !(key in answer.headers)) answer.headers[key] = value;
  }
  return answer;
}

function notModified(request, answer) {
  // RFC 9110: If-None-Match first (weak comparison); else If-Modified-Since.
  if (answer.status !== 200 || (request.method !== "GET" && request.method !== "HEAD")) return false;
  const {etag, "last-modified": modified} = answer.headers;
  const match = request.headers["if-none-match"];
  if (match !== undefined) {
    const tags = match.split(",").map((tag) => tag.trim().replace(/^W\//, ""));
    return etag !== undefined && (tags.includes("*") || tags.includes(etag.replace(/^W\//, "")));
  }
  const since = request.headers["if-modified-since"];
  return since !== undefined && modified !== undefined && Date.parse(modified) <= Date.parse(since);
}

function behaviourOf(distribution, uri) {
  // The first behaviour whose path pattern matches the viewer's path (* and ?), else the default.
  for (const behaviour of distribution.behaviours) {
    const pattern = behaviour.path.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
    if (new RegExp("^" + pattern + "$").test(uri)) return behaviour;
  }
  return distribution.default;
}

// ---- the server -----------------------------------------------------------------------------

async function answer(request, used = {}) {
  const state = await deployed();
  used.generation = state.generation;
  const event = viewerEvent(request);
  const behaviour = behaviourOf(state.distribution, event.request.uri);
  const decided = state.viewer.handler(event);
  if (decided.statusCode !== undefined) {  // the function's own answer, with its headers
    const headers = {};
    for (const name of Object.keys(decided.headers || {})) headers[name] = decided.headers[name].value;
    return {status: decided.statusCode, headers, body: Buffer.from(decided.body || "")};
  }
  const found = await originRequest(state, behaviour, decided, request);
  if (found.final) return found;
  const accepted = request.headers["accept-encoding"] || "";
  const made = policy(compress(found, request.method, accepted, state.distribution), behaviour);
  if (!notModified(request, made)) return made;
  for (const name of ["content-type", "content-encoding"]) delete made.headers[name];
  return {status: 304, headers: made.headers, body: Buffer.alloc(0)};
}

function send(response, method, made) {
  const headers = {...made.headers};
  if (made.status !== 304) headers["content-length"] = String(made.body.length);
  response.writeHead(made.status, headers);
  response.end(method === "HEAD" || made.status === 304 ? undefined : made.body);
}

async function answerWhole(request) {
  // A read that failed because a build collected the generation it read meanwhile (builds
  // keep two) is answered again from the one published since: a deploy, the files and the
  // function together, is atomic for a viewer. (Reads only: a POST never reaches the origin.)
  for (let attempt = 1; ; attempt++) {
    const used = {};
    try {
      return await answer(request, used);
    } catch (error) {
      if (attempt >= 5 || !["GET", "HEAD"].includes(request.method) || used.generation === undefined
          || await realpath(path.join(site, given.current)).catch(() => used.generation) === used.generation) {
        throw error;
      }
    }
  }
}

const server = http.createServer((request, response) => {
  answerWhole(request).then((made) => send(response, request.method, made), (error) => {
    console.error(error);  // (CloudFront answers a function's or handler's failure with its own 5xx)
    send(response, request.method, {status: 503, headers: {"content-type": "text/plain"},
                                     body: Buffer.from("503 ERROR: the request could not be satisfied.\n")});
  });
});

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => process.exit(0));  // (a stop asked for is a clean exit)
}
served = await load(given);
server.listen(given.port, given.host);
