import { PageHead } from "../../../ui/components";
import { Layout, type PageContext } from "../../../ui/layout";
import { type AccessSectionsProps, ApiTokensSection, OperatorsSection } from "./access";
import { EnrolmentSection, type EnrolmentSectionProps } from "./enrolment";
import { MonitoringSections, type MonitoringSectionsProps } from "./monitoring";
import { TunnelHostKeySection } from "./remote-access";
import { SecondFactorSection, type SecondFactorSectionProps } from "./second-factor";

export type SettingsPageProps = MonitoringSectionsProps &
  AccessSectionsProps &
  EnrolmentSectionProps &
  SecondFactorSectionProps & {
    /** The tunnel SSH server's host key fingerprint (remote access). */
    tunnelFingerprint?: string;
  };

export function SettingsPage({ ctx, props }: { ctx: PageContext; props: SettingsPageProps }) {
  return (
    <Layout ctx={ctx} title="Settings">
      <PageHead
        title="Settings"
        subtitle="Monitoring, notifications, operators, second factor, API tokens, enrolment tokens and remote access."
      />
      <MonitoringSections ctx={ctx} props={props} />
      {props.operators ? <OperatorsSection ctx={ctx} props={props} /> : ""}
      <SecondFactorSection ctx={ctx} props={props} />
      <ApiTokensSection ctx={ctx} props={props} />
      <EnrolmentSection ctx={ctx} props={props} />
      <TunnelHostKeySection fingerprint={props.tunnelFingerprint} />
    </Layout>
  );
}
