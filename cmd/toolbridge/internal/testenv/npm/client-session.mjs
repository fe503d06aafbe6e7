// client-session.mjs plays a whole toolbridge session with the official
// TypeScript SDK client (@modelcontextprotocol/sdk), the client most hosts
// are built on. The SDK checks answers strictly: every structuredContent
// against the tool's outputSchema, every message against the protocol's
// schemas. testenv writes this file next to the pinned node_modules and the
// Go e2e tests run it:
//
//   node client-session.mjs '<spec JSON>'
//
// spec: {"session": "demo" | "activate" | "npm" | "search" | "calls",
//        "transport": "stdio" | "http",
//        "command", "args", "env"   (stdio: how to start toolbridge)
//        "url"                      (http: toolbridge's /mcp endpoint)
//        "root", "note", "noteText" (npm: the filesystem server's root, a
//                                    file in it and the file's text)
//        "searches"                 (search: [{"query", "want"}], each
//                                    want an id tool_search must put in
//                                    its top 5)
//        "searchRetryMs"            (search: how long a query is asked
//                                    again until its want is found, for
//                                    a gateway still embedding its
//                                    catalog; 0 asks once)
//        "calls"                    (calls: [{"name", "args", "want",
//                                    "isError"}]: each call's text must
//                                    hold want, and its isError match)}
//
// Output, one JSON object per line on stdout: first {"plan": [step names]},
// then {"step", "ok", "detail"?, "error"?} per step in order, then
// {"done": true, "failed": N}. The exit code is 1 when a step failed.
// Any protocol error the SDK reports fails the last step, "no protocol
// errors".

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";

const spec = JSON.parse(process.argv[2] ?? "{}");
const stepTimeoutMs = 90_000;

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

function clip(s, n = 600) {
  s = typeof s === "string" ? s : JSON.stringify(s);
  return s.length > n ? s.slice(0, n) + "…" : s;
}

function textOf(res) {
  return (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

// ---- the client, with every capability a host may declare ----

const protocolErrors = [];
const served = { sampling: 0, elicitation: 0, roots: 0 };
let listChanged = 0;
const listChangedWaiters = [];

const client = new Client(
  { name: "toolbridge-ts-sdk-driver", version: "1.0.0" },
  {
    capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } },
    enforceStrictCapabilities: true,
  },
);
client.onerror = (err) => protocolErrors.push(String(err?.stack ?? err));
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  listChanged++;
  for (const w of listChangedWaiters.splice(0)) w();
});
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  served.sampling++;
  const asked = req.params.messages.map((m) => m.content?.text ?? "").join(" ");
  return {
    model: "driver-model",
    role: "assistant",
    stopReason: "endTurn",
    content: { type: "text", text: `sampled-by-driver (${asked.length} chars asked)` },
  };
});
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  served.elicitation++;
  // Fill every field the server asks for with a value of its type.
  const content = {};
  const props = req.params.requestedSchema?.properties ?? {};
  for (const [name, p] of Object.entries(props)) {
    if (p.enum) content[name] = p.enum[0];
    else if (p.oneOf) content[name] = p.oneOf[0].const;
    else if (p.type === "boolean") content[name] = true;
    else if (p.type === "integer" || p.type === "number") content[name] = p.default ?? p.minimum ?? 1;
    else if (p.type === "array") content[name] = p.items?.anyOf ? [p.items.anyOf[0].const] : p.items?.enum ? [p.items.enum[0]] : [];
    else if (p.format === "email") content[name] = "ada@example.com";
    else if (p.format === "uri") content[name] = "https://example.com";
    else if (p.format === "date") content[name] = "1815-12-10";
    else if (p.format === "date-time") content[name] = "1815-12-10T00:00:00Z";
    else content[name] = name === "name" ? "Ada Driver" : "text";
  }
  return { action: "accept", content };
});
client.setRequestHandler(ListRootsRequestSchema, async () => {
  served.roots++;
  const roots = [{ uri: "file:///driver-root", name: "driver-root" }];
  if (spec.root) roots.push({ uri: "file://" + spec.root, name: "filesystem-root" });
  return { roots };
});

const validator = new AjvJsonSchemaValidator();

// watchingGetStream is fetch that resolves getStreamOpen once a GET (the
// stream for server-to-client messages) is answered 200.
let getStreamOpened;
const getStreamOpen = new Promise((r) => (getStreamOpened = r));
async function watchingGetStream(url, init) {
  const res = await fetch(url, init);
  if ((init?.method ?? "GET") === "GET" && res.status === 200) getStreamOpened(true);
  return res;
}

// ---- helpers over the meta-tools ----

async function call(name, args) {
  return client.callTool({ name, arguments: args });
}

async function search(query, limit) {
  const res = await call("tool_search", limit ? { query, limit } : { query });
  assert(!res.isError, `tool_search ${JSON.stringify(query)} failed: ${textOf(res)}`);
  assert(res.structuredContent, "tool_search returned no structuredContent");
  return res.structuredContent;
}

// expectParameterless searches query and requires id among the hits with
// an empty parameter list: the shape strict clients used to reject.
async function expectParameterless(query, id) {
  const sc = await search(query, 20);
  const hit = sc.tools.find((t) => t.id === id);
  assert(hit, `${id} not among the hits for ${JSON.stringify(query)}: ${sc.tools.map((t) => t.id).join(", ")}`);
  assert(Array.isArray(hit.parameters) && hit.parameters.length === 0, `${id} parameters: ${JSON.stringify(hit.parameters)}`);
  return `${sc.tools.length} hits, ${id} with parameters []`;
}

async function describe(args) {
  const res = await call("tool_describe", args);
  assert(!res.isError, `tool_describe failed: ${textOf(res)}`);
  return res;
}

// describeBatch describes ids plus one unknown id and checks the batch
// answer: every known tool described, the unknown one reported, the text
// compact JSON.
async function describeBatch(ids) {
  const res = await describe({ tool_names: [...ids, "no_such_tool_xyz"] });
  const sc = res.structuredContent;
  assert(sc && sc.tools.length === ids.length, `described ${sc?.tools?.length} of ${ids.length}`);
  for (const id of ids) assert(sc.tools.some((t) => t.id === id && t.inputSchema), `${id} missing from the batch`);
  assert(sc.not_found?.length === 1, `not_found: ${JSON.stringify(sc.not_found)}`);
  const json = textOf(res).split("\n\nNot found:")[0];
  assert(!json.includes("\n"), "describe text is not compact JSON");
  assert(JSON.parse(json).length === ids.length, "describe text does not parse as the list of tools");
  return `${ids.length} described, 1 not found, ${json.length} chars`;
}

// callThrough calls a tool through tool_call and holds its structured
// result to the tool's own outputSchema (from tool_describe), as the SDK
// would had the client called the tool directly.
async function callThrough(id, args, want) {
  const described = (await describe({ tool_name: id })).structuredContent.tools[0];
  const res = await call("tool_call", { tool_name: id, tool_args: args });
  assert(!res.isError, `tool_call ${id}: ${textOf(res)}`);
  if (described.outputSchema) {
    assert(res.structuredContent, `${id} declares an outputSchema but tool_call returned no structuredContent`);
    const v = validator.getValidator(described.outputSchema)(res.structuredContent);
    assert(v.valid, `${id}'s structuredContent does not match its outputSchema: ${v.errorMessage}`);
  }
  if (want) assert(textOf(res).includes(want) || JSON.stringify(res.structuredContent ?? {}).includes(want), `tool_call ${id}: ${want} not in ${clip(textOf(res))}`);
  return clip(textOf(res) || JSON.stringify(res.structuredContent), 160);
}

async function expectToolError(name, args, want) {
  const res = await call(name, args);
  assert(res.isError, `want isError, got ${clip(textOf(res))}`);
  assert(textOf(res).includes(want), `${JSON.stringify(want)} not in ${clip(textOf(res))}`);
  return clip(textOf(res), 160);
}

function nextListChanged(timeoutMs = 20_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no notifications/tools/list_changed within ${timeoutMs} ms`)), timeoutMs);
    listChangedWaiters.push(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

async function toolNames() {
  return (await client.listTools()).tools.map((t) => t.name).sort();
}

// ---- the steps ----

const connect = [
  "initialize",
  async () => {
    const transport =
      spec.transport === "http"
        ? new StreamableHTTPClientTransport(new URL(spec.url), { fetch: watchingGetStream })
        : new StdioClientTransport({ command: spec.command, args: spec.args ?? [], env: { ...process.env, ...(spec.env ?? {}) }, stderr: "inherit" });
    await client.connect(transport);
    if (spec.transport === "http") {
      // The SDK opens the GET stream in the background after initialize.
      // Waiting for it here checks that it opens: sampling and roots
      // requests go out on it (docs/team.md, "Server requests over HTTP").
      const opened = await Promise.race([getStreamOpen, new Promise((r) => setTimeout(() => r(false), 30_000))]);
      assert(opened, "the client's GET stream did not open within 30 s");
    }
    const caps = client.getServerCapabilities();
    assert(caps?.tools, `server declares no tools capability: ${JSON.stringify(caps)}`);
    return `${client.getServerVersion()?.name} ${client.getServerVersion()?.version} over ${spec.transport}`;
  },
];

// oauth: an in-memory OAuthClientProvider, as a host keeps one. The
// "browser" is fetch: the authorization endpoint approves the login and
// redirects back with the code, which the redirect's Location carries.
const oauthState = { client: undefined, tokens: undefined, verifier: undefined, code: undefined, authorizeURL: undefined };
const authProvider = {
  get redirectUrl() { return "http://127.0.0.1:9/callback"; },
  get clientMetadata() {
    return { client_name: "toolbridge-ts-sdk-driver", redirect_uris: ["http://127.0.0.1:9/callback"],
      grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "none" };
  },
  clientInformation() { return oauthState.client; },
  saveClientInformation(info) { oauthState.client = info; },
  tokens() { return oauthState.tokens; },
  saveTokens(t) { oauthState.tokens = t; },
  saveCodeVerifier(v) { oauthState.verifier = v; },
  codeVerifier() { return oauthState.verifier; },
  async redirectToAuthorization(url) {
    oauthState.authorizeURL = url.toString();
    const res = await fetch(url, { redirect: "manual" });
    const back = new URL(res.headers.get("location") ?? "http://invalid/");
    oauthState.code = back.searchParams.get("code");
    assert(oauthState.code, `the authorization endpoint gave no code: ${res.status} ${back}`);
  },
};

const oauthConnect = [
  "discover from the 401, log in (code + PKCE), get a token, initialize",
  async () => {
    const url = new URL(spec.url);
    let transport = new StreamableHTTPClientTransport(url, { authProvider });
    const before = protocolErrors.length;
    try {
      await client.connect(transport);
      throw new Error("connected without logging in: the gateway did not ask for a token");
    } catch (err) {
      if (!(err instanceof UnauthorizedError)) throw err;
    }
    // The SDK also reports the expected 401 through onerror: it is the
    // start of the flow, not a protocol error.
    const unexpected = protocolErrors.splice(before).filter((e) => !/Unauthorized/.test(e));
    protocolErrors.push(...unexpected);
    assert(oauthState.authorizeURL, "the SDK did not start the authorization");
    const authorize = new URL(oauthState.authorizeURL);
    assert(authorize.searchParams.get("code_challenge_method") === "S256", `no PKCE: ${authorize}`);
    assert(authorize.searchParams.get("resource") === spec.url, `resource ${authorize.searchParams.get("resource")}, want ${spec.url}`);
    await transport.finishAuth(oauthState.code);
    assert(oauthState.tokens?.access_token, "no access token saved");
    transport = new StreamableHTTPClientTransport(url, { authProvider });
    await client.connect(transport);
    return `logged in as client ${oauthState.client?.client_id}; scope ${oauthState.tokens.scope}`;
  },
];

const metaList = [
  "tools/list shows the meta-tools",
  async () => {
    const tools = (await client.listTools()).tools;
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const m of ["tool_search", "tool_describe", "tool_call"]) assert(byName[m], `${m} not listed: ${Object.keys(byName)}`);
    assert(byName.tool_search.outputSchema, "tool_search declares no outputSchema");
    assert(!byName.tool_call.outputSchema, "tool_call declares an outputSchema no tool result can be held to");
    return tools.map((t) => t.name).join(", ");
  },
];

const noProtocolErrors = [
  "no protocol errors",
  async () => {
    assert(protocolErrors.length === 0, protocolErrors.join("\n"));
  },
];

const sessions = {
  demo: [
    connect,
    metaList,
    ["search: a tool without parameters", () => expectParameterless("list tags", "notes::list_tags")],
    ["search: keywords", async () => {
      const sc = await search("convert temperature units");
      assert(sc.tools[0]?.id === "math::convert_units", `first hit ${sc.tools[0]?.id}`);
      return sc.tools.map((t) => t.id).join(", ");
    }],
    ["search: empty query browses the catalog", async () => {
      const sc = await search("");
      assert(sc.tools.length === 0 && sc.catalog?.length > 0, clip(sc));
      return sc.catalog.map((s) => `${s.server} (${s.total})`).join(", ");
    }],
    ["search: no match lists the catalog", async () => {
      const sc = await search("zzqqxxjjvv");
      assert(sc.tools.length === 0 && sc.catalog?.length > 0, clip(sc));
    }],
    // The fallback answer has the most members (tools, partial and the
    // catalog at once): the SDK holds it to tool_search's outputSchema.
    ["search: a misspelling falls back to partial matches", async () => {
      const sc = await search("convrt");
      assert(sc.partial === true && sc.tools.length > 0 && sc.catalog?.length > 0, clip(sc));
      return sc.tools.map((t) => t.id).join(", ");
    }],
    // Annotation filters add hints to every hit and a count of what they
    // removed: the SDK holds that answer to the outputSchema too.
    ["search: read_only filter with hints", async () => {
      const res = await call("tool_search", { query: "note", read_only: true, exclude_destructive: true, limit: 20 });
      assert(!res.isError, textOf(res));
      const sc = res.structuredContent;
      assert(sc.tools.length > 0 && sc.tools.every((t) => t.annotations?.includes("read-only")), clip(sc));
      assert(sc.filtered_out > 0, `nothing filtered out: ${clip(sc)}`);
      return `${sc.tools.map((t) => t.id).join(", ")}; ${sc.filtered_out} filtered out`;
    }],
    ["describe: a batch", () => describeBatch(["math::convert_units", "notes::list_tags", "json::json_validate"])],
    ["describe: openai format", async () => {
      const sc = (await describe({ tool_name: "math::convert_units", format: "openai" })).structuredContent;
      assert(sc.tools[0].type === "function" && sc.tools[0].function?.parameters, clip(sc));
    }],
    ["call: valid arguments", () => callThrough("math::convert_units", { value: 100, from: "celsius", to: "fahrenheit" }, "212")],
    ["call: invalid arguments are a tool error", () =>
      expectToolError("tool_call", { tool_name: "math::convert_units", tool_args: { value: 100, from: "celsius", to: "parsecs" } }, "at /to")],
    ["call: arguments as a JSON string", async () => {
      const res = await call("tool_call", { tool_name: "create_note", tool_args: JSON.stringify({ title: "Groceries", body: "milk, eggs" }) });
      assert(!res.isError && textOf(res).includes("Groceries"), clip(textOf(res)));
      return clip(textOf(res), 160);
    }],
    ["call: unknown tool gets did-you-mean", () => expectToolError("tool_call", { tool_name: "creat_note", tool_args: { title: "x" } }, "notes::create_note")],
    ["call: structured result through tool_call", () => callThrough("json::json_validate", { json: '{"a":1}' }, "valid")],
    ["call: a deferred tool by its own name", async () => {
      const res = await call("get_note", { id: "n1" });
      assert(!res.isError && textOf(res).includes("milk, eggs"), clip(textOf(res)));
    }],
    noProtocolErrors,
  ],

  activate: [
    connect,
    ["tools/list before any search", async () => {
      const names = await toolNames();
      assert(JSON.stringify(names) === JSON.stringify(["tool_call", "tool_describe", "tool_search"]), names.join(", "));
    }],
    ["search activates: list_changed arrives", async () => {
      const changed = nextListChanged();
      await search("convert temperature units", 1);
      await changed;
      return `${listChanged} list_changed`;
    }],
    ["activated tool is listed", async () => {
      const names = await toolNames();
      assert(names.includes("convert_units"), names.join(", "));
      return names.join(", ");
    }],
    ["activated tool is callable", async () => {
      const res = await call("convert_units", { value: 100, from: "celsius", to: "fahrenheit" });
      assert(!res.isError && textOf(res).includes("212"), clip(textOf(res)));
    }],
    ["activated tool with an outputSchema answers what it declares", async () => {
      const changed = nextListChanged();
      await search("validate json", 1);
      await changed;
      const tool = (await client.listTools()).tools.find((t) => t.name === "json_validate");
      assert(tool?.outputSchema, "json_validate not listed with its outputSchema");
      // The SDK holds the answer to the outputSchema it just listed.
      const res = await call("json_validate", { json: "[1,2" });
      assert(res.structuredContent?.valid === false, clip(res));
    }],
    noProtocolErrors,
  ],

  npm: [
    connect,
    metaList,
    ["server declares resources and prompts", async () => {
      const caps = client.getServerCapabilities();
      assert(caps.resources && caps.prompts, JSON.stringify(caps));
    }],
    ["search: parameterless filesystem tool", () => expectParameterless("list allowed directories", "filesystem::list_allowed_directories")],
    ["search: parameterless everything tools", async () =>
      [await expectParameterless("environment variables", "everything::get-env"), await expectParameterless("tiny image", "everything::get-tiny-image")].join("; ")],
    ["search: read a file", async () => {
      const sc = await search("read a file");
      assert(sc.tools.length > 0, clip(sc));
      return sc.tools.map((t) => t.id).join(", ");
    }],
    ["search: a listed core tool is a hit marked already_listed", async () => {
      const sc = await search("write a file");
      const hit = sc.tools.find((t) => t.id === "filesystem::write_file");
      assert(hit && hit.already_listed === true && hit.name === "write_file" && hit.description === undefined && hit.parameters === undefined, clip(sc));
      assert(sc.ranking === "lexical", `ranking: ${sc.ranking}`);
      return `${hit.id} already_listed, ranking ${sc.ranking}`;
    }],
    ["describe: a batch", () => describeBatch(["filesystem::read_text_file", "memory::create_entities", "everything::get-structured-content", "everything::get-env"])],
    ["call: a listed core tool directly", async () => {
      // read_text_file is core (in place of read_file, which its server
      // deprecates), so listed; the SDK holds its answer to its outputSchema.
      const res = await call("read_text_file", { path: spec.note });
      assert(!res.isError && textOf(res).includes(spec.noteText), clip(res));
    }],
    ["call: valid arguments", () => callThrough("filesystem::read_text_file", { path: spec.note }, spec.noteText)],
    ["call: invalid arguments are a tool error", () => expectToolError("tool_call", { tool_name: "filesystem::read_text_file", tool_args: { head: "x" } }, "path")],
    ["call: arguments as a JSON string", async () => {
      const entities = { entities: [{ name: "driver", entityType: "client", observations: ["speaks TypeScript"] }] };
      const res = await call("tool_call", { tool_name: "memory::create_entities", tool_args: JSON.stringify(entities) });
      assert(!res.isError, clip(textOf(res)));
      return callThrough("memory::read_graph", {}, "speaks TypeScript");
    }],
    ["call: unknown tool gets did-you-mean", () => expectToolError("tool_call", { tool_name: "everything::get_sums" }, "everything::get-sum")],
    ["call: structured result through tool_call", () => callThrough("everything::get-structured-content", { location: "Chicago" }, "temperature")],
    ["resources: list and read", async () => {
      const { resources } = await client.listResources();
      assert(resources.length > 0, "no resources");
      const text = resources.find((r) => r.mimeType?.startsWith("text/")) ?? resources[0];
      const read = await client.readResource({ uri: text.uri });
      assert(read.contents.length > 0 && read.contents[0].uri, clip(read));
      return `${resources.length} resources; read ${text.uri}`;
    }],
    ["resources: templates", async () => {
      const { resourceTemplates } = await client.listResourceTemplates();
      assert(resourceTemplates.length > 0, "no resource templates");
      return resourceTemplates.map((t) => t.uriTemplate).join(", ");
    }],
    ["prompts: list and get", async () => {
      const { prompts } = await client.listPrompts();
      const simple = prompts.find((p) => p.name.includes("simple-prompt"));
      assert(simple, `no simple-prompt among ${prompts.map((p) => p.name)}`);
      const got = await client.getPrompt({ name: simple.name });
      assert(got.messages.length > 0, clip(got));
      return `${prompts.length} prompts; got ${simple.name}`;
    }],
    ["sampling passes through", async () => {
      const before = served.sampling;
      const text = await callThrough("everything::trigger-sampling-request", { prompt: "say hi", maxTokens: 5 }, "sampled-by-driver");
      assert(served.sampling === before + 1, `sampling handler ran ${served.sampling - before} times`);
      return text;
    }],
    ["elicitation passes through", async () => {
      const before = served.elicitation;
      const text = await callThrough("everything::trigger-elicitation-request", {}, "Ada Driver");
      assert(served.elicitation === before + 1, `elicitation handler ran ${served.elicitation - before} times`);
      return text;
    }],
    ["roots pass through", () => callThrough("everything::get-roots-list", {}, "driver-root")],
    noProtocolErrors,
  ],

  // oauth: the whole MCP authorization flow against a gateway with
  // serve.oauth, then a bridge session: search, describe, call. spec.want
  // is a deferred tool the caller may use, spec.hidden one they may not.
  oauth: [
    oauthConnect,
    metaList,
    ["search finds the caller's tool", async () => {
      const ids = (await search(spec.wantQuery, 5)).tools.map((t) => t.id);
      assert(ids.includes(spec.want), `${spec.want} not found for ${spec.wantQuery}: ${ids}`);
      return ids.join(", ");
    }],
    ["search hides the other team's tool", async () => {
      const sc = await search(spec.hiddenQuery, 5);
      const text = JSON.stringify(sc);
      assert(!text.includes(spec.hidden), `${spec.hidden} shown: ${clip(text)}`);
      return clip(text, 200);
    }],
    ["describe", async () => {
      const res = await call("tool_describe", { tool_name: spec.want });
      assert(!res.isError, textOf(res));
      return clip(textOf(res), 200);
    }],
    ["call", async () => {
      const res = await call("tool_call", { tool_name: spec.want, tool_args: spec.wantArgs ?? {} });
      assert(!res.isError, textOf(res));
      return clip(textOf(res), 200);
    }],
    ["a hidden tool is unknown", async () => {
      const res = await call("tool_call", { tool_name: spec.hidden, tool_args: {} });
      assert(res.isError && /Unknown tool/.test(textOf(res)), clip(textOf(res)));
    }],
    noProtocolErrors,
  ],

  // search: the spec's queries, each of which must find its tool in the
  // top 5; the SDK holds every answer to tool_search's outputSchema.
  search: [
    connect,
    metaList,
    ...(spec.searches ?? []).map(({ query, want }, i) => [`search ${i + 1}: ${clip(query, 80)}`, async () => {
      // Every answer, found or not, is held to the outputSchema.
      const until = Date.now() + (spec.searchRetryMs ?? 0);
      for (let asked = 1; ; asked++) {
        const ids = (await search(query, 5)).tools.map((t) => t.id);
        if (ids.includes(want)) return `${ids.join(", ")} (asked ${asked}×)`;
        assert(Date.now() < until, `${want} not in the top 5 for ${JSON.stringify(query)}: ${ids.join(", ")}`);
        await new Promise((r) => setTimeout(r, 500));
      }
    }]),
    noProtocolErrors,
  ],

  // calls: the spec's tool calls, in order, after tools/list (which gives
  // the SDK the outputSchemas it holds every structuredContent to).
  calls: [
    connect,
    metaList,
    ...(spec.calls ?? []).map(({ name, args, want, isError }, i) => [`call ${i + 1}: ${name} ${clip(JSON.stringify(args ?? {}), 80)}`, async () => {
      const res = await call(name, args ?? {});
      const text = textOf(res);
      assert(Boolean(res.isError) === Boolean(isError), `isError ${res.isError}, want ${Boolean(isError)}: ${clip(text)}`);
      assert(text.includes(want), `${JSON.stringify(want)} not in ${clip(text)}`);
      return clip(text, 200);
    }]),
    noProtocolErrors,
  ],
};

// ---- run ----

const steps = sessions[spec.session];
if (!steps) {
  emit({ step: "spec", ok: false, error: `unknown session ${JSON.stringify(spec.session)}; want one of ${Object.keys(sessions)}` });
  process.exit(2);
}
emit({ plan: steps.map(([name]) => name) });
let failed = 0;
for (const [name, fn] of steps) {
  let timer;
  try {
    const detail = await Promise.race([
      fn(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`step timed out after ${stepTimeoutMs} ms`)), stepTimeoutMs);
      }),
    ]);
    emit(detail === undefined ? { step: name, ok: true } : { step: name, ok: true, detail: clip(detail, 400) });
  } catch (err) {
    failed++;
    emit({ step: name, ok: false, error: clip(String(err?.stack ?? err), 3000) });
  } finally {
    clearTimeout(timer);
  }
}
emit({ done: true, failed });
await client.close().catch(() => {});
process.exit(failed ? 1 : 0);
