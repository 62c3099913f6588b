import { EmptyState, PageHead } from "../components";
import type { IconName } from "../icons";
import { Layout, type PageContext } from "../layout";

/**
 * Sections whose features are still being built show an honest empty state that says what will
 * appear there — never sample data.
 */
export const UPCOMING_SECTIONS: Record<string, { title: string; icon: IconName; heading: string; text: string }> = {
  "/": {
    title: "Dashboard",
    icon: "dashboard",
    heading: "No devices yet",
    text: "Fleet totals, devices online, pending approvals and active alerts appear here once devices register with the Outpost agent.",
  },
  "/devices": {
    title: "Devices",
    icon: "devices",
    heading: "No devices have registered",
    text: "Install the Outpost agent on a Linux device and run `outpost-agent register`. New devices wait here for approval.",
  },
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
  "/e2e": {
    title: "E2E runs",
    icon: "e2e",
    heading: "No E2E runs",
    text: "Runs created by CI systems through the E2E API appear here with each journey's result and log.",
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
