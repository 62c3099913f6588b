import { BuiltinIoError } from "../scripts/sandbox.ts";

export interface MqttPolicy {
  url: string;
  username: string | null;
  password: string | null;
  publishAllowlist: string[];
  subscribeAllowlist: string[];
  timeoutMs: number;
}

/** MQTT topic filter matching (`+` one level, `#` the rest). */
export function topicMatches(filter: string, topic: string): boolean {
  const f = filter.split("/");
  const t = topic.split("/");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === "#") return i === f.length - 1;
    if (i >= t.length) return false;
    if (f[i] !== "+" && f[i] !== t[i]) return false;
  }
  return f.length === t.length;
}

function checkTopic(kind: string, topic: unknown): string {
  if (typeof topic !== "string" || topic === "" || topic.length > 512) {
    throw new BuiltinIoError(`pub_and_get: ${kind} topic must be a non-empty string`);
  }
  if (/[+#\0]/.test(topic))
    throw new BuiltinIoError(`pub_and_get: ${kind} topic must not contain wildcards: ${topic}`);
  return topic;
}

/** Top-level keys of a JSON message must equal the `accept` values (numbers compared numerically). */
export function messageAccepted(text: string, accept: Record<string, unknown> | null): boolean {
  if (!accept || Object.keys(accept).length === 0) return true;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return false;
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return false;
  const obj = parsed as Record<string, unknown>;
  return Object.entries(accept).every(([key, want]) => {
    const got = obj[key];
    if (typeof want === "number" || typeof got === "number") return Number(got) === Number(want);
    return JSON.stringify(got) === JSON.stringify(want);
  });
}

/**
 * `pub_and_get(topic, msg, reply_topic?, accept?)`: subscribe to `reply_topic` (default `topic`), publish
 * `msg` (a string, or a value sent as JSON) to `topic`, and resolve to the first reply that matches
 * `accept`, or null after the timeout. When reply topic == topic, the echo of our own message is ignored.
 * Both topics must be allowed by the publish / subscribe allowlists (which may use `+`/`#`).
 */
export async function pubAndGetBuiltin(
  policy: MqttPolicy,
  rawArgs: unknown[],
  signal: AbortSignal,
): Promise<string | null> {
  const [rawTopic, rawMsg, rawReply, rawAccept] = rawArgs;
  if (policy.publishAllowlist.length === 0 || policy.subscribeAllowlist.length === 0) {
    throw new BuiltinIoError(
      "pub_and_get: capability is not configured (mqtt publish/subscribe allowlists are empty)",
    );
  }
  const topic = checkTopic("publish", rawTopic);
  const replyTopic = rawReply === undefined || rawReply === null ? topic : checkTopic("reply", rawReply);
  if (!policy.publishAllowlist.some((f) => topicMatches(f, topic))) {
    throw new BuiltinIoError(`pub_and_get: publishing to "${topic}" is not allowlisted`);
  }
  if (!policy.subscribeAllowlist.some((f) => topicMatches(f, replyTopic))) {
    throw new BuiltinIoError(`pub_and_get: subscribing to "${replyTopic}" is not allowlisted`);
  }
  if (
    rawAccept !== undefined &&
    rawAccept !== null &&
    (typeof rawAccept !== "object" || Array.isArray(rawAccept))
  ) {
    throw new BuiltinIoError("pub_and_get: accept must be an object of key → expected value");
  }
  const accept = (rawAccept ?? null) as Record<string, unknown> | null;
  const message = typeof rawMsg === "string" ? rawMsg : JSON.stringify(rawMsg ?? null);
  if (message.length > 256 * 1024) throw new BuiltinIoError("pub_and_get: message exceeds 256 KiB");

  // Loaded on first use: the MQTT client is the heaviest dependency and most devices never need it.
  const { default: mqtt } = await import("mqtt");
  const client = mqtt.connect(policy.url, {
    clientId: `outpost-agent-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
    username: policy.username ?? undefined,
    password: policy.password ?? undefined,
    connectTimeout: policy.timeoutMs,
    reconnectPeriod: 0,
    clean: true,
  });
  try {
    return await new Promise<string | null>((resolve, reject) => {
      const timer = setTimeout(() => resolve(null), policy.timeoutMs);
      const fail = (err: Error) => {
        clearTimeout(timer);
        reject(new BuiltinIoError(`pub_and_get: ${err.message}`));
      };
      signal.addEventListener("abort", () => fail(new Error("aborted")), { once: true });
      client.on("error", fail);
      client.on("message", (t, payload) => {
        if (t !== replyTopic) return;
        const text = payload.toString("utf8");
        if (replyTopic === topic && text === message) return;
        if (!messageAccepted(text, accept)) return;
        clearTimeout(timer);
        resolve(text);
      });
      client.on("connect", async () => {
        try {
          await client.subscribeAsync(replyTopic, { qos: 0 });
          await client.publishAsync(topic, message, { qos: 0, retain: false });
        } catch (err) {
          fail(err as Error);
        }
      });
    });
  } finally {
    client.end(true);
  }
}
