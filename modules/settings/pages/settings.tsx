import { PageHead } from "../../../ui/components";
import { Layout, type PageContext } from "../../../ui/layout";
import { type AccessSectionsProps, ApiTokensSection, OperatorsSection } from "./access";
import { MonitoringSections, type MonitoringSectionsProps } from "./monitoring";

export type SettingsPageProps = MonitoringSectionsProps & AccessSectionsProps;

export function SettingsPage({ ctx, props }: { ctx: PageContext; props: SettingsPageProps }) {
  return (
    <Layout ctx={ctx} title="Settings">
      <PageHead title="Settings" subtitle="Monitoring, notifications, operators and API tokens." />
      <MonitoringSections ctx={ctx} props={props} />
      {props.operators ? <OperatorsSection ctx={ctx} props={props} /> : ""}
      <ApiTokensSection ctx={ctx} props={props} />
    </Layout>
  );
}
