// For tests/hosts/test_cloudflare.py and test_publish.py: the generated Worker in workerd over a local R2 bucket.
// Reads {packages (where node_modules/miniflare is), worker, prefix, compatibilityDate, writeService, objects: [[key, file]],
// requests: [[method, target, headers, body]]} from standard input, puts each file into the bucket under its key, asks the Worker each
// request and writes the answers ({status, headers, body}) as JSON.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
const given = JSON.parse(fs.readFileSync(0, "utf8"));
const { Miniflare } = createRequire(path.join(given.packages, "package.json"))("miniflare");
const worker = new Miniflare({modules: true, scriptPath: given.worker, modulesRoot: path.dirname(given.worker),
  compatibilityDate: given.compatibilityDate, r2Buckets: ["BUCKET"], bindings: {PREFIX: given.prefix, WRITE_SERVICE: given.writeService || ""}});
const bucket = await worker.getR2Bucket("BUCKET");
for (const [key, file] of given.objects) await bucket.put(key, fs.readFileSync(file));
const answers = [];
for (const [method, target, headers, body] of given.requests) {
  const answer = await worker.dispatchFetch("http://localhost" + target, {method, headers, body, redirect: "manual"});
  answers.push({status: answer.status, headers: Object.fromEntries(answer.headers), body: await answer.text()});
}
await worker.dispose();
process.stdout.write(JSON.stringify(answers));
