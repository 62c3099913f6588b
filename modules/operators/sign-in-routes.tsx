import { Elysia, type Static, t } from "elysia";
import { consolePages, safeNext } from "../../ui/page";
import { recordAudit } from "../audit/service";
import { checkCsrf, csrfTokenFor } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { clientAddress } from "../platform/http";
import { type EnrolStep, enrolmentSteps } from "./enrolment";
import { EnrolledPage, RequiredEnrolmentPage, SecondFactorPage } from "./factor-pages";
import { listFactors } from "./factors";
import { EnrolForm, FactorForm } from "./model";
import { passkeyAuthenticationOptions, relyingParty } from "./passkeys";
import { sessionCookies } from "./session-cookie";
import { completeSignIn, type PendingSignIn, resolvePendingSignIn, verifySecondFactor } from "./sign-in";

/**
 * The second step of sign-in, under the pending cookie `POST /login` set: the second factor, or the
 * enrolment a role requires. These routes are public (a pending sign-in is no principal) and check
 * the pending cookie and its CSRF token themselves; they record their own audit events.
 */
export function signInRoutes(ctx: AppContext) {
  const { config, database } = ctx;
  const db = database.db;
  const rp = relyingParty(config.baseUrl);
  const cookies = sessionCookies(config.baseUrl);
  const { htmlPage, redirectWithFlash } = consolePages(config);
  const userAgent = (request: Request) => request.headers.get("user-agent") ?? undefined;

  async function pendingOf(request: Request, stage: PendingSignIn["stage"]) {
    const token = cookies.read(request);
    const pending = token ? await resolvePendingSignIn(db, token) : undefined;
    return pending?.stage === stage ? pending : undefined;
  }
  const startOver = () =>
    redirectWithFlash("/login", { kind: "info", text: "Your sign-in expired. Sign in again." });
  const csrfOf = (pending: PendingSignIn) => csrfTokenFor(config.secretKey, pending.idHash);

  async function promptPage(pending: PendingSignIn, next: string, error?: string, status = 200) {
    const factors = await listFactors(db, pending.operator.id);
    const passkeyOptions = await passkeyAuthenticationOptions(db, rp, {
      operatorId: pending.operator.id,
      sessionIdHash: pending.idHash,
    });
    return htmlPage(
      { flash: undefined },
      <SecondFactorPage
        csrfToken={csrfOf(pending)}
        action="/login/second-factor"
        next={next}
        hasTotp={factors.some((f) => f.kind === "totp")}
        passkeyOptions={passkeyOptions}
        offerRecovery={true}
        error={error}
      />,
      status,
    );
  }

  /** Signs in for real: the audit event, the new cookie, and either `next` or the recovery codes page. */
  async function finish(
    request: Request,
    address: string,
    pending: PendingSignIn,
    next: string,
    secondFactor: string,
    codes?: string[],
  ) {
    const token = await completeSignIn(db, pending, {
      ttlHours: config.sessionTtlHours,
      address,
      userAgent: userAgent(request),
    });
    await recordAudit(database, {
      actorKind: "operator",
      actor: pending.operator.email,
      action: "session.sign_in",
      target: `operator:${pending.operator.id}`,
      status: 303,
      address,
      details: { second_factor: secondFactor },
    });
    const cookie = cookies.set(token, config.sessionTtlHours * 3600);
    if (codes) {
      // The new session's CSRF token is not needed on this page: it has no form.
      return htmlPage({ flash: undefined }, <EnrolledPage csrfToken="" codes={codes} next={next} />, 201, [
        cookie,
      ]);
    }
    return redirectWithFlash(next, undefined, undefined, [cookie]);
  }

  const enrol = enrolmentSteps({ db, secretKey: config.secretKey, rp, clock: ctx.clock });
  const holderOf = (pending: PendingSignIn) => ({ operator: pending.operator, idHash: pending.idHash });

  async function enrolPage(pending: PendingSignIn, next: string, shown = {}, status = 200) {
    const props = await enrol.formProps(
      holderOf(pending),
      "/login/enrol",
      { csrfToken: csrfOf(pending), next },
      shown,
    );
    return htmlPage({ flash: undefined }, <RequiredEnrolmentPage {...props} />, status);
  }

  async function enrolStep(
    path: EnrolStep,
    request: Request,
    body: Static<typeof EnrolForm>,
    server: Parameters<typeof clientAddress>[1],
  ) {
    const pending = await pendingOf(request, "enrol");
    if (!pending) return startOver();
    checkCsrf(config.secretKey, pending.idHash, request, body);
    const next = safeNext(body.next);
    const outcome = await enrol.step(path, holderOf(pending), body);
    if ("show" in outcome) return enrolPage(pending, next, outcome.show, outcome.status);
    const address = clientAddress(request, server);
    await recordAudit(database, {
      actorKind: "operator",
      actor: pending.operator.email,
      action: `factor.enrol_${outcome.enrolled.kind}`,
      target: `operator:${pending.operator.id}`,
      status: 201,
      address,
      details: { name: outcome.enrolled.name },
    });
    return finish(request, address, pending, next, `enrolled_${outcome.enrolled.kind}`, outcome.codes);
  }

  return new Elysia({ name: "sign-in" })
    .use(ctx.access)
    .get(
      "/login/second-factor",
      async ({ request, query }) => {
        const pending = await pendingOf(request, "factor");
        return pending ? promptPage(pending, safeNext(query.next)) : startOver();
      },
      { access: "public", query: t.Object({ next: t.Optional(t.String()) }) },
    )
    .post(
      "/login/second-factor",
      async ({ request, body, server }) => {
        const pending = await pendingOf(request, "factor");
        if (!pending) return startOver();
        checkCsrf(config.secretKey, pending.idHash, request, body);
        const next = safeNext(body.next);
        const address = clientAddress(request, server);
        try {
          const method = await verifySecondFactor(
            db,
            { secretKey: config.secretKey, rp, clock: ctx.clock },
            { operator: pending.operator, sessionIdHash: pending.idHash, address, ...body },
          );
          return finish(request, address, pending, next, method);
        } catch (error) {
          if (!(error instanceof AppError) || ![401, 429].includes(error.status)) throw error;
          await recordAudit(database, {
            actorKind: "operator",
            actor: pending.operator.email,
            action: "session.factor_failed",
            target: `operator:${pending.operator.id}`,
            status: error.status,
            address,
            details: { method: body.method.slice(0, 20) },
          });
          const response = await promptPage(pending, next, error.message, error.status);
          for (const [name, value] of Object.entries(error.headers ?? {})) response.headers.set(name, value);
          return response;
        }
      },
      { access: "public", body: FactorForm },
    )
    .get(
      "/login/enrol",
      async ({ request, query }) => {
        const pending = await pendingOf(request, "enrol");
        return pending ? enrolPage(pending, safeNext(query.next)) : startOver();
      },
      { access: "public", query: t.Object({ next: t.Optional(t.String()) }) },
    )
    .post("/login/enrol/totp", ({ request, body, server }) => enrolStep("totp", request, body, server), {
      access: "public",
      body: EnrolForm,
    })
    .post(
      "/login/enrol/totp/confirm",
      ({ request, body, server }) => enrolStep("totp/confirm", request, body, server),
      { access: "public", body: EnrolForm },
    )
    .post(
      "/login/enrol/passkeys",
      ({ request, body, server }) => enrolStep("passkeys", request, body, server),
      {
        access: "public",
        body: EnrolForm,
      },
    );
}
