import { Elysia } from "elysia";
import { consolePages, safeNext } from "../../ui/page";
import type { Principal } from "../platform/access";
import type { AppContext } from "../platform/context";
import { AppError } from "../platform/errors";
import { clientAddress } from "../platform/http";
import { AccountPage, VerifyPage } from "./account-page";
import { type EnrolStep, enrolmentSteps, type FactorHolder } from "./enrolment";
import type { EnrolProps } from "./factor-pages";
import { generateRecoveryCodes, listFactors, recoveryCodesLeft, removeFactor, renameFactor } from "./factors";
import { AccountButtonForm, EnrolForm, FactorParams, NextQuery, RenameFactorForm, VerifyForm } from "./model";
import { passkeyAuthenticationOptions, relyingParty } from "./passkeys";
import { readFactorPolicy } from "./policy";
import { markFactorVerified, verifySecondFactor } from "./sign-in";

type SessionPrincipal = Extract<Principal, { kind: "session" }>;

/** An account is a person's: API tokens have none (403 `session_required`). */
function sessionOf(principal: Principal | undefined): SessionPrincipal {
  if (principal?.kind !== "session") {
    throw new AppError(
      403,
      "session_required",
      "Your account is managed by a signed-in operator, not an API token",
    );
  }
  return principal;
}

const holderOf = (principal: SessionPrincipal): FactorHolder => ({
  operator: { id: principal.operatorId, email: principal.email, role: principal.role },
  idHash: principal.sessionIdHash,
});

/** The account page (second factors, recovery codes) and the fresh-factor prompt before devices. */
export function accountRoutes(ctx: AppContext) {
  const { config, database } = ctx;
  const db = database.db;
  const rp = relyingParty(config.baseUrl);
  const enrol = enrolmentSteps({ db, secretKey: config.secretKey, rp, clock: ctx.clock });
  const { pageContext, htmlPage, redirectWithFlash } = consolePages(config);

  async function accountPage(
    request: Request,
    principal: SessionPrincipal,
    shown: Pick<EnrolProps, "pendingTotp" | "error"> = {},
    options: { status?: number; newCodes?: string[] } = {},
  ) {
    const page = pageContext(request, principal);
    const [factors, recoveryLeft, policy] = await Promise.all([
      listFactors(db, principal.operatorId),
      recoveryCodesLeft(db, principal.operatorId),
      readFactorPolicy(db),
    ]);
    const enrolProps = await enrol.formProps(
      holderOf(principal),
      "/account",
      { csrfToken: page.csrfToken },
      shown,
    );
    return htmlPage(
      page,
      <AccountPage
        ctx={page}
        props={{
          factors,
          recoveryLeft,
          policy: policy[principal.role],
          enrol: enrolProps,
          newCodes: options.newCodes,
        }}
      />,
      options.status ?? 200,
    );
  }

  async function enrolStep(
    path: EnrolStep,
    request: Request,
    principal: Principal | undefined,
    body: EnrolForm,
  ) {
    const session = sessionOf(principal);
    const outcome = await enrol.step(path, holderOf(session), body);
    if ("show" in outcome) return accountPage(request, session, outcome.show, { status: outcome.status });
    if (outcome.codes) return accountPage(request, session, {}, { status: 201, newCodes: outcome.codes });
    return redirectWithFlash("/account", { kind: "success", text: `${outcome.enrolled.name} added.` });
  }

  async function verifyPage(
    request: Request,
    principal: SessionPrincipal,
    next: string,
    error?: string,
    status = 200,
  ) {
    const page = pageContext(request, principal);
    const factors = await listFactors(db, principal.operatorId);
    const passkeyOptions = await passkeyAuthenticationOptions(db, rp, {
      operatorId: principal.operatorId,
      sessionIdHash: principal.sessionIdHash,
    });
    const prompt =
      factors.length === 0
        ? undefined
        : {
            csrfToken: page.csrfToken,
            action: "/account/verify",
            next,
            hasTotp: factors.some((f) => f.kind === "totp"),
            passkeyOptions,
            offerRecovery: false,
          };
    return htmlPage(page, <VerifyPage ctx={page} prompt={prompt} error={error} />, status);
  }

  async function factorChange(run: () => Promise<string>) {
    try {
      return redirectWithFlash("/account#second-factors", { kind: "success", text: await run() });
    } catch (error) {
      if (error instanceof AppError && [400, 404, 409].includes(error.status)) {
        return redirectWithFlash("/account#second-factors", { kind: "error", text: error.message });
      }
      throw error;
    }
  }

  return new Elysia({ name: "account" })
    .use(ctx.access)
    .get("/account", ({ request, principal }) => accountPage(request, sessionOf(principal)), {
      access: "viewer",
    })
    .post("/account/totp", ({ request, principal, body }) => enrolStep("totp", request, principal, body), {
      access: "viewer",
      body: EnrolForm,
    })
    .post(
      "/account/totp/confirm",
      ({ request, principal, body }) => enrolStep("totp/confirm", request, principal, body),
      { access: "viewer", body: EnrolForm },
    )
    .post(
      "/account/passkeys",
      ({ request, principal, body }) => enrolStep("passkeys", request, principal, body),
      { access: "viewer", body: EnrolForm },
    )
    .post(
      "/account/factors/:id/rename",
      ({ principal, params, body }) =>
        factorChange(async () => {
          const factor = await renameFactor(db, {
            operatorId: sessionOf(principal).operatorId,
            factorId: params.id,
            name: body.name ?? "",
          });
          return `Renamed to ${factor.name}.`;
        }),
      { access: "viewer", params: FactorParams, body: RenameFactorForm },
    )
    .post(
      "/account/factors/:id/delete",
      ({ principal, params }) =>
        factorChange(async () => {
          const session = sessionOf(principal);
          const policy = await readFactorPolicy(db);
          const factor = await removeFactor(db, {
            operatorId: session.operatorId,
            factorId: params.id,
            required: policy[session.role].required,
          });
          return `${factor.name} removed.`;
        }),
      { access: "viewer", params: FactorParams, body: AccountButtonForm },
    )
    .post(
      "/account/recovery-codes",
      async ({ request, principal }) => {
        const session = sessionOf(principal);
        if ((await listFactors(db, session.operatorId)).length === 0) {
          return redirectWithFlash("/account", { kind: "error", text: "Add a second factor first." });
        }
        const codes = await generateRecoveryCodes(db, session.operatorId);
        return accountPage(request, session, {}, { status: 201, newCodes: codes });
      },
      { access: "viewer", body: AccountButtonForm },
    )
    .get(
      "/account/verify",
      ({ request, principal, query }) => verifyPage(request, sessionOf(principal), safeNext(query.next)),
      { access: "viewer", query: NextQuery },
    )
    .post(
      "/account/verify",
      async ({ request, principal, body, server }) => {
        const session = sessionOf(principal);
        const next = safeNext(body.next);
        try {
          await verifySecondFactor(
            db,
            { secretKey: config.secretKey, rp, clock: ctx.clock },
            {
              operator: holderOf(session).operator,
              sessionIdHash: session.sessionIdHash,
              method: body.method ?? "",
              code: body.code ?? "",
              response: body.response ?? "",
              address: clientAddress(request, server),
            },
          );
        } catch (error) {
          if (!(error instanceof AppError) || ![401, 429].includes(error.status)) throw error;
          const response = await verifyPage(request, session, next, error.message, error.status);
          for (const [name, value] of Object.entries(error.headers ?? {})) response.headers.set(name, value);
          return response;
        }
        await markFactorVerified(db, session.sessionIdHash);
        return redirectWithFlash(next, { kind: "success", text: "Confirmed. Go ahead." });
      },
      { access: "viewer", body: VerifyForm },
    );
}
