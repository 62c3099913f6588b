import { Badge, CsrfField, PostButton, Time } from "../../../ui/components";
import { OneTimeSecret, SelectField, TextField } from "../../../ui/form";
import type { PageContext } from "../../../ui/layout";
import { Card, DataTable } from "../../../ui/table";
import {
  type ApiTokenView,
  EMAIL_MAX,
  OPERATOR_ROLES,
  type OperatorRole,
  TOKEN_NAME_MAX,
} from "../../operators/service";

export interface OperatorRow {
  id: string;
  email: string;
  role: OperatorRole;
  disabledAt: Date | null;
  lastLoginAt: Date | null;
  createdAt: Date;
  /** Confirmed second factors. */
  factors: number;
}

type Errors = Partial<Record<string, string>>;
type Values = Partial<Record<string, string>>;

export interface AccessSectionsProps {
  operators?: OperatorRow[];
  newOperator?: { email: string; password: string };
  operatorErrors?: Errors;
  operatorValues?: Values;
  tokens: ApiTokenView[];
  /** A token just created: shown this once, never again. */
  newToken?: { name: string; secret: string };
  tokenError?: string;
  tokenName?: string;
}

/** Roles listed from the least to the most powerful, the order people choose in. */
const ROLE_CHOICES = [...OPERATOR_ROLES].reverse();

function OperatorActions({ ctx, operator }: { ctx: PageContext; operator: OperatorRow }) {
  const self = ctx.principal?.kind === "session" && ctx.principal.operatorId === operator.id;
  if (self) return <span class="muted small">you</span>;
  return operator.disabledAt ? (
    <PostButton
      action={`/settings/operators/${operator.id}/enable`}
      csrfToken={ctx.csrfToken}
      label="Enable"
    />
  ) : (
    <PostButton
      action={`/settings/operators/${operator.id}/disable`}
      csrfToken={ctx.csrfToken}
      label="Disable"
      tone="danger"
      confirm={`Disable ${operator.email}? They are signed out at once.`}
    />
  );
}

/** How many second factors, and an admin's reset for someone who lost theirs (audited). */
function FactorCell({ ctx, operator }: { ctx: PageContext; operator: OperatorRow }) {
  if (operator.factors === 0) return <span class="muted">none</span>;
  return (
    <span class="row-form" data-factor-count={String(operator.factors)}>
      <span safe>{`${operator.factors}`}</span>
      <PostButton
        action={`/settings/operators/${operator.id}/reset-factors`}
        csrfToken={ctx.csrfToken}
        label="Reset"
        tone="danger"
        confirm={`Remove every second factor and recovery code of ${operator.email}? They enrol again at their next sign-in if their role requires it.`}
      />
    </span>
  );
}

function RoleForm({ ctx, operator }: { ctx: PageContext; operator: OperatorRow }) {
  return (
    <form method="post" action={`/settings/operators/${operator.id}/role`} class="row-form">
      <CsrfField token={ctx.csrfToken} />
      <label class="visually-hidden" for={`role-${operator.id}`}>
        Role
      </label>
      <select name="role" id={`role-${operator.id}`}>
        {ROLE_CHOICES.map((role) => (
          <option value={role} selected={operator.role === role}>
            {role}
          </option>
        ))}
      </select>
      <button class="btn small" type="submit">
        Change
      </button>
    </form>
  );
}

export function OperatorsSection({ ctx, props }: { ctx: PageContext; props: AccessSectionsProps }) {
  const errors = props.operatorErrors ?? {};
  const values = props.operatorValues ?? {};
  return (
    <Card title="Operators" id="operators">
      <p class="muted">
        Admins change settings and tokens, operators act on devices, viewers only read. A disabled operator is
        signed out at once.
      </p>
      {props.newOperator ? (
        <OneTimeSecret
          id="new-operator-password"
          headline={`${props.newOperator.email} can now sign in.`}
          advice="Give them this initial password over a safe channel; it is shown only once."
          secret={props.newOperator.password}
        />
      ) : (
        ""
      )}
      <form
        method="post"
        action="/settings/operators"
        class="inline-form"
        style="margin-bottom: 1rem"
        novalidate
      >
        <CsrfField token={ctx.csrfToken} />
        <TextField
          name="email"
          label="Email"
          type="email"
          required
          maxLength={EMAIL_MAX}
          value={values.email ?? ""}
          error={errors.email}
        />
        <SelectField
          name="role"
          label="Role"
          options={ROLE_CHOICES}
          value={values.role ?? "viewer"}
          labelStyle="flex: 0 1 160px"
        />
        <button class="btn primary" type="submit">
          Add operator
        </button>
      </form>
      <DataTable
        rows={props.operators ?? []}
        empty="No operators."
        stackOnPhone
        columns={[
          { header: "Email", text: (operator) => operator.email },
          { header: "Role", render: (operator) => <RoleForm ctx={ctx} operator={operator} /> },
          {
            header: "Status",
            render: (operator) =>
              operator.disabledAt ? (
                <Badge tone="danger" label="disabled" />
              ) : (
                <Badge tone="ok" label="active" />
              ),
          },
          {
            header: "Second factor",
            render: (operator) => <FactorCell ctx={ctx} operator={operator} />,
          },
          {
            header: "Last sign-in",
            class: "hide-sm",
            render: (operator) => <Time value={operator.lastLoginAt} />,
          },
          {
            header: "Actions",
            hiddenHeader: true,
            class: "row-actions",
            render: (operator) => <OperatorActions ctx={ctx} operator={operator} />,
          },
        ]}
      />
    </Card>
  );
}

function RevokeToken({ ctx, token }: { ctx: PageContext; token: ApiTokenView }) {
  return token.revokedAt ? (
    <Badge tone="danger" label="revoked" />
  ) : (
    <PostButton
      action={`/settings/tokens/${token.id}/revoke`}
      csrfToken={ctx.csrfToken}
      label="Revoke"
      tone="danger"
      confirm={`Revoke the token "${token.name}"? Programs using it stop working at once.`}
    />
  );
}

export function ApiTokensSection({ ctx, props }: { ctx: PageContext; props: AccessSectionsProps }) {
  return (
    <Card title="API tokens" id="api-tokens">
      <p class="muted">
        Programs call the API with <code>Authorization: Bearer {"&lt;token&gt;"}</code>. A token has the
        rights of its role. Only a hash is stored: the token is shown once, when it is created.
      </p>
      {props.newToken ? (
        <OneTimeSecret
          id="new-token"
          headline={`Token "${props.newToken.name}" created.`}
          advice="Copy it now; it will not be shown again."
          secret={props.newToken.secret}
        />
      ) : (
        ""
      )}
      <form method="post" action="/settings/tokens" class="inline-form" style="margin-bottom: 1rem">
        <CsrfField token={ctx.csrfToken} />
        <TextField
          name="name"
          label="Name"
          required
          maxLength={TOKEN_NAME_MAX}
          placeholder="e.g. ci-pipeline"
          value={props.tokenName ?? ""}
          error={props.tokenError}
        />
        <SelectField
          name="role"
          label="Role"
          options={ROLE_CHOICES}
          value="viewer"
          labelStyle="flex: 0 1 160px"
        />
        <button class="btn primary" type="submit">
          Create token
        </button>
      </form>
      <DataTable
        rows={props.tokens}
        empty="No API tokens yet."
        stackOnPhone
        columns={[
          { header: "Name", text: (token) => token.name },
          { header: "Token", render: (token) => <code safe>{`${token.prefix}…`}</code> },
          { header: "Role", render: (token) => <Badge label={token.role} /> },
          { header: "Created", render: (token) => <Time value={token.createdAt} /> },
          { header: "Last used", render: (token) => <Time value={token.lastUsedAt} /> },
          {
            header: "Actions",
            hiddenHeader: true,
            class: "row-actions",
            render: (token) => <RevokeToken ctx={ctx} token={token} />,
          },
        ]}
      />
    </Card>
  );
}
