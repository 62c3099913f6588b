import { EmptyState, PageHead } from "../components";
import type { IconName } from "../icons";
import { Layout, type PageContext } from "../layout";

/**
 * Sections whose features are still being built show an honest empty state that says what will
 * appear there — never sample data.
 */
export const UPCOMING_SECTIONS: Record<
  string,
  { title: string; icon: IconName; heading: string; text: string }
> = {
  "/alerts": {
    title: "Alerts",
    icon: "alerts",
    heading: "No alert rules",
    text: "Alert rules watch device telemetry and notify you by email or webhook. Active alerts will be listed here.",
  },
  "/reports": {
    title: "Reports",
    icon: "reports",
    heading: "No reports",
    text: "Custom reports summarise telemetry across the fleet. Reports you build will be listed here.",
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
