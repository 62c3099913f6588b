import { CsrfField, PageHead } from "../../../../ui/components";
import { CheckboxField, InstallAdviceNotes, OneTimeSecret, TextField } from "../../../../ui/form";
import { Layout, type PageContext } from "../../../../ui/layout";
import { type InstallAdvice, installLine } from "../../../enrolment/service";
import { DEVICE_NAME_MAX, PRODUCT_NAME_MAX } from "../../validation";

export interface DeviceNewProps {
  /** The console's address, for the install one-liner. */
  baseUrl: string;
  /** Why the install line would fail on this server (no agent builds), and help for a private CA. */
  installAdvice?: InstallAdvice;
  values?: { mac_address?: string; product_name?: string; name?: string; approved?: boolean };
  errors?: Partial<Record<"mac_address" | "product_name" | "name" | "form", string>>;
  /** The device just pre-registered, with its claim token (shown this once). */
  created?: { id: string; macAddress: string; approved: boolean; claimToken: string };
}

function Created({ created, baseUrl }: { created: NonNullable<DeviceNewProps["created"]>; baseUrl: string }) {
  return (
    <section class="card" id="created">
      <OneTimeSecret
        id="claim-token"
        headline={`Device ${created.macAddress} added${created.approved ? " and approved" : ""}.`}
        advice="Its claim token, shown once: the device must present it to take this entry (its MAC address alone is not enough)."
        secret={created.claimToken}
      />
      <p>Install the agent with it on the device, as root or as a user who may sudo:</p>
      <div class="secret" id="claim-install-line" safe>
        {installLine(baseUrl ?? "", created.claimToken)}
      </div>
      <p class="help">
        Or put <code>{"enrolment_token: &lt;claim token&gt;"}</code> in an installed agent's configuration.{" "}
        {created.approved
          ? "Its first registration with the token gets its API token at once."
          : "It then waits for approval."}{" "}
        A registration of this MAC without the token is shown as an identity conflict.{" "}
        <a href={`/devices/${created.id}`}>Open the device</a>
      </p>
    </section>
  );
}

export function DeviceNewPage({ ctx, props }: { ctx: PageContext; props: DeviceNewProps }) {
  const values = props.values ?? {};
  const errors = props.errors ?? {};
  return (
    <Layout ctx={ctx} title="Add device">
      <nav class="breadcrumb" aria-label="Breadcrumb">
        <a href="/devices">Devices</a> <span aria-hidden="true">/</span> <span>Add device</span>
      </nav>
      <PageHead
        title="Add device"
        subtitle="Install the agent with an enrolment token, or pre-register a device by its MAC address."
      />
      {props.created ? <Created created={props.created} baseUrl={props.baseUrl} /> : ""}
      <section class="card" id="install">
        <h2>Install the agent with one line</h2>
        <p>
          On the device (Debian, Ubuntu, Raspberry Pi OS; x86-64 or arm64), as root or as a user who may sudo.
          It downloads the agent from this server, checks its SHA-256, installs the service and enrols the
          device with the token's policy (approved at once, or pending until you approve it on the Devices
          page):
        </p>
        <InstallAdviceNotes missingBuilds={props.installAdvice?.missingBuilds} />
        <div class="secret" id="install-line" safe>
          {installLine(props.baseUrl ?? "", "<enrolment token>")}
        </div>
        <InstallAdviceNotes privateCa={props.installAdvice?.privateCa} />
        <p class="help">
          {ctx.principal?.role === "admin" ? (
            <a href="/settings#enrolment-tokens">Create an enrolment token in Settings</a>
          ) : (
            "An admin creates enrolment tokens in Settings"
          )}
          : the line is shown there with the token in it, once. <code>--help</code> lists the installer's
          options (a plain binary instead of the package, a prefix, a private sshd for the terminal, no
          start).
        </p>
      </section>
      <section class="card" id="pre-register">
        <h2>Or pre-register it by its MAC address</h2>
        <div class="grid two align-start">
          <ol class="steps">
            <li>Add the device's MAC address here, approved or pending.</li>
            <li>
              Install the Outpost agent on the device with the claim token shown once after adding it (the
              same one-line installer, or <code>enrolment_token</code> in its configuration).
            </li>
            <li>
              Registration finds this entry by MAC and the claim token. A pre-approved device gets its API
              token straight away and starts sending heartbeats; a pending one waits for approval on the
              Devices page.
            </li>
          </ol>
          <div>
            {errors.form ? (
              <p class="flash error" role="alert" safe>
                {errors.form}
              </p>
            ) : (
              ""
            )}
            <form method="post" action="/devices" class="stacked" novalidate>
              <CsrfField token={ctx.csrfToken} />
              <TextField
                id="mac"
                name="mac_address"
                label="MAC address"
                value={values.mac_address ?? ""}
                maxLength={17}
                required
                autocomplete="off"
                spellcheck={false}
                placeholder="AA:BB:CC:DD:EE:FF"
                class="mono"
                help="The primary network interface's address. Colons, dashes or none."
                error={errors.mac_address}
              />
              <TextField
                name="product_name"
                label="Product (optional)"
                value={values.product_name ?? ""}
                maxLength={PRODUCT_NAME_MAX}
                placeholder="e.g. gateway-v2"
                error={errors.product_name}
              />
              <TextField
                name="name"
                label="Name (optional; the agent reports its own once it registers)"
                value={values.name ?? ""}
                maxLength={DEVICE_NAME_MAX}
                error={errors.name}
              />
              <CheckboxField name="approved" value="on" checked={values.approved ?? false}>
                <span>
                  Approve now
                  <span class="help block">
                    The device's first registration with its claim token is accepted at once and receives its
                    API token.
                  </span>
                </span>
              </CheckboxField>
              <div class="actions">
                <button class="btn primary" type="submit">
                  Add device
                </button>
                <a class="btn" href="/devices">
                  Cancel
                </a>
              </div>
            </form>
          </div>
        </div>
      </section>
    </Layout>
  );
}
