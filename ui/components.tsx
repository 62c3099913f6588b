import { type Children, escapeHtml } from "@kitajs/html";
import { CSRF_FIELD } from "../modules/platform/access";
import { Icon, type IconName } from "./icons";

export function PageHead({
  title,
  subtitle,
  children,
}: {
  title: string;
  subtitle?: string;
  children?: Children;
}) {
  return (
    <div class="page-head">
      <div>
        <h1 safe>{title}</h1>
        {subtitle ? <p safe>{subtitle}</p> : ""}
      </div>
      <div class="actions">{children ?? ""}</div>
    </div>
  );
}

/** `text` may name commands in `backticks`: they are shown as code (everything stays escaped). */
export function EmptyState(props: { icon: IconName; title: string; text: string; children?: Children }) {
  return (
    <div class="card empty">
      <Icon name={props.icon} />
      <h2 safe>{props.title}</h2>
      <p>
        {props.text
          .split("`")
          .map((part, index) => (index % 2 === 1 ? <code safe>{part}</code> : escapeHtml(part)))}
      </p>
      {props.children ?? ""}
    </div>
  );
}

export function CsrfField({ token }: { token: string }) {
  return <input type="hidden" name={CSRF_FIELD} value={token} />;
}

/**
 * A one-button form that POSTs to `action` with the CSRF token (and optional hidden fields),
 * asking `confirm` first when given: every small state-changing action in the UI.
 */
export function PostButton(props: {
  action: string;
  csrfToken: string;
  label: string;
  tone?: "primary" | "danger";
  confirm?: string;
  fields?: Record<string, string>;
}) {
  return (
    <form method="post" action={props.action} data-confirm={props.confirm}>
      <CsrfField token={props.csrfToken} />
      {Object.entries(props.fields ?? {}).map(([name, value]) => (
        <input type="hidden" name={name} value={value} />
      ))}
      <button class={props.tone ? `btn small ${props.tone}` : "btn small"} type="submit" safe>
        {props.label}
      </button>
    </form>
  );
}

export function FieldError({ message }: { message: string | undefined }) {
  return message ? (
    <span class="field-error" role="alert" safe>
      {message}
    </span>
  ) : (
    ""
  );
}

/** A status pill; `label` is escaped here. */
export function Badge({ tone, label }: { tone?: "ok" | "warn" | "danger" | "info"; label: string }) {
  return (
    <span class={tone ? `badge ${tone}` : "badge"} safe>
      {label}
    </span>
  );
}

/** A UTC timestamp shown in the reader's words, with the exact time on hover. */
export function Time({ value }: { value: Date | null | undefined }) {
  if (!value) return <span class="muted">never</span>;
  const iso = value.toISOString();
  return (
    <time datetime={iso} title={iso} safe>
      {relativeTime(value)}
    </time>
  );
}

export function relativeTime(value: Date, now = Date.now()): string {
  const seconds = Math.round((now - value.getTime()) / 1000);
  const future = seconds < 0;
  const abs = Math.abs(seconds);
  const phrase =
    abs < 45
      ? "just now"
      : abs < 90 * 60
        ? `${Math.round(abs / 60)} min`
        : abs < 36 * 3600
          ? `${Math.round(abs / 3600)} h`
          : `${Math.round(abs / 86400)} d`;
  if (phrase === "just now") return phrase;
  return future ? `in ${phrase}` : `${phrase} ago`;
}
