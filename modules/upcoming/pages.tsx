import { EmptyState, PageHead } from "../../ui/components";
import type { IconName } from "../../ui/icons";
import { Layout, type PageContext } from "../../ui/layout";

/**
 * Sections whose features are not built yet say so plainly — what will appear there and that it
 * does not work yet — never sample data or an empty state that looks like a working feature.
 */
export const UPCOMING_SECTIONS: Record<
  string,
  { title: string; icon: IconName; heading: string; text: string }
> = {
  "/alerts": {
    title: "Alerts",
    icon: "alerts",
    heading: "Alerts are not built yet",
    text: "Alert rules that watch device telemetry and notify by email or webhook are coming in a later release. Until then nothing raises alerts, and the notification settings are stored but send nothing.",
  },
};

export function UpcomingPage({ ctx, path }: { ctx: PageContext; path: string }) {
  const section = UPCOMING_SECTIONS[path]!;
  return (
    <Layout ctx={ctx} title={section.title}>
      <PageHead title={section.title} />
      <EmptyState icon={section.icon} title={section.heading} text={section.text} />
    </Layout>
  );
}
