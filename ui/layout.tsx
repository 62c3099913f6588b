import type { Children } from "@kitajs/html";
import type { Principal } from "../modules/platform/access";
import { assetUrl } from "./assets";
import type { Flash } from "./flash";
import { Icon, type IconName } from "./icons";

/** What every page needs to know about the request it answers. */
export interface PageContext {
  path: string;
  principal: Principal | undefined;
  csrfToken: string;
  flash: Flash | undefined;
}

const NAV: { href: string; label: string; icon: IconName; adminOnly?: boolean }[] = [
  { href: "/", label: "Dashboard", icon: "dashboard" },
  { href: "/devices", label: "Devices", icon: "devices" },
  { href: "/rollouts", label: "Rollouts", icon: "jobs" },
  { href: "/alerts", label: "Alerts", icon: "alerts" },
  { href: "/reports", label: "Reports", icon: "reports" },
  { href: "/e2e", label: "E2E runs", icon: "e2e" },
  { href: "/terminal/sessions", label: "Terminal sessions", icon: "terminal" },
  { href: "/jobs", label: "Jobs", icon: "jobs" },
  { href: "/audit", label: "Audit log", icon: "audit", adminOnly: true },
  { href: "/settings", label: "Settings", icon: "settings", adminOnly: true },
];

function isCurrent(href: string, path: string): boolean {
  return href === "/" ? path === "/" : path === href || path.startsWith(`${href}/`);
}

function Head({ title, csrfToken }: { title: string; csrfToken?: string }) {
  return (
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title safe>{`${title} · Outpost`}</title>
      {csrfToken ? <meta name="csrf-token" content={csrfToken} /> : ""}
      <link rel="icon" href={assetUrl("favicon.svg")} type="image/svg+xml" />
      <link rel="stylesheet" href={assetUrl("app.css")} />
      <script src={assetUrl("htmx.min.js")} defer></script>
      <script src={assetUrl("app.js")} defer></script>
    </head>
  );
}

export function FlashMessage({ flash }: { flash: Flash | undefined }) {
  if (!flash) return "";
  return (
    <div class={`flash ${flash.kind}`} role={flash.kind === "error" ? "alert" : "status"} safe>
      {flash.text}
    </div>
  );
}

function who(principal: Principal): string {
  return principal.kind === "session" ? principal.email : `token ${principal.name}`;
}

export function Layout({ ctx, title, children }: { ctx: PageContext; title: string; children: Children }) {
  return (
    <>
      {"<!doctype html>"}
      <html lang="en">
        <Head title={title} csrfToken={ctx.csrfToken} />
        <body>
          <header class="topbar">
            <button
              type="button"
              class="nav-toggle"
              data-nav-toggle
              aria-expanded="false"
              aria-controls="sidebar"
            >
              <span aria-hidden="true">☰</span>
              <span class="visually-hidden">Menu</span>
            </button>
            <a class="brand" href="/">
              <span class="brand-mark">◆</span>Outpost
            </a>
          </header>
          <div class="shell">
            <aside class="sidebar" id="sidebar">
              <a class="brand" href="/">
                <span class="brand-mark">◆</span>Outpost
              </a>
              <nav class="nav" aria-label="Main">
                {NAV.filter((item) => !item.adminOnly || ctx.principal?.role === "admin").map((item) => (
                  <a href={item.href} aria-current={isCurrent(item.href, ctx.path) ? "page" : undefined}>
                    <Icon name={item.icon} />
                    <span safe>{item.label}</span>
                  </a>
                ))}
              </nav>
              {ctx.principal ? (
                <div class="sidebar-foot">
                  <div class="who" safe>
                    {who(ctx.principal)}
                  </div>
                  <span class="role-pill">{ctx.principal.role}</span>
                  <form method="post" action="/logout">
                    <input type="hidden" name="_csrf" value={ctx.csrfToken} />
                    <button type="submit" class="link-button">
                      Sign out
                    </button>
                  </form>
                </div>
              ) : (
                ""
              )}
            </aside>
            <main class="main" id="main">
              <FlashMessage flash={ctx.flash} />
              {children}
            </main>
          </div>
        </body>
      </html>
    </>
  );
}

/** Pages without navigation: sign-in, first-run setup. */
export function AuthLayout({
  title,
  csrfToken,
  children,
}: {
  title: string;
  csrfToken: string;
  children: Children;
}) {
  return (
    <>
      {"<!doctype html>"}
      <html lang="en">
        <Head title={title} csrfToken={csrfToken} />
        <body>
          <main class="auth">
            <div class="auth-card">
              <div class="brand">
                <span class="brand-mark">◆</span>Outpost
              </div>
              <div class="card">{children}</div>
            </div>
          </main>
        </body>
      </html>
    </>
  );
}

/** A bare error page, rendered without a session lookup so it can never fail itself. */
export function ErrorPage(props: { status: number; title: string; message: string; requestId: string }) {
  return (
    <>
      {"<!doctype html>"}
      <html lang="en">
        <Head title={props.title} />
        <body>
          <main class="auth">
            <div class="auth-card card error-page">
              <div class="code" safe>
                {String(props.status)}
              </div>
              <h1 safe>{props.title}</h1>
              <p class="muted" safe>
                {props.message}
              </p>
              <p class="muted">
                <small>
                  Request id <code safe>{props.requestId}</code>
                </small>
              </p>
              <a class="btn primary" href="/">
                Back to the dashboard
              </a>
            </div>
          </main>
        </body>
      </html>
    </>
  );
}

export function renderErrorPage(props: {
  status: number;
  title: string;
  message: string;
  requestId: string;
}): string {
  return String(<ErrorPage {...props} />);
}
