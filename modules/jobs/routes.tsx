import { Elysia, t } from "elysia";
import { consolePages } from "../../ui/page";
import { noteAudit } from "../audit/service";
import type { Principal } from "../platform/access";
import type { AppContext } from "../platform/context";
import { errorReplies } from "../platform/schemas";
import { JobQueuedReply, JobsReply, JobTaskParams, jobsJson, RunJobForm } from "./model";
import { JobsActivity, JobsPage, type JobsPageProps } from "./pages";
import { jobOverview, knownTasks, listQueuedJobs, listRecentRuns, runJobNow } from "./service";
import type { JobCatalog } from "./task";

export function jobRoutes(ctx: AppContext, catalog: JobCatalog) {
  const { pageContext, htmlPage, redirectWithFlash } = consolePages(ctx.config);
  const { database, access } = ctx;

  async function pageProps(principal: Principal | undefined): Promise<JobsPageProps> {
    const [overview, queue, runs] = await Promise.all([
      jobOverview(database),
      listQueuedJobs(database),
      listRecentRuns(database),
    ]);
    return { overview, queue, runs, tasks: knownTasks(catalog), canRun: principal?.role === "admin" };
  }

  return new Elysia({ name: "jobs" })
    .use(access)
    .get(
      "/jobs",
      async ({ request, principal, query }) => {
        const props = await pageProps(principal);
        if (query.fragment === "activity")
          return htmlPage({ flash: undefined }, <JobsActivity props={props} />);
        const page = pageContext(request, principal);
        return htmlPage(page, <JobsPage ctx={page} props={props} />);
      },
      { access: "viewer", query: t.Object({ fragment: t.Optional(t.Literal("activity")) }) },
    )
    .post(
      "/jobs/run",
      async ({ body, request }) => {
        const jobId = await runJobNow(database, catalog, body.task);
        noteAudit(request, { target: `job:${body.task}`, details: { job_id: jobId } });
        return redirectWithFlash("/jobs", { kind: "success", text: `Queued ${body.task}.` });
      },
      {
        access: "admin",
        body: RunJobForm,
      },
    )
    .get(
      "/api/v1/jobs",
      async () => {
        const [overview, queue, runs] = await Promise.all([
          jobOverview(database),
          listQueuedJobs(database),
          listRecentRuns(database),
        ]);
        return { data: { ...jobsJson(overview, queue, runs), tasks: knownTasks(catalog) } };
      },
      {
        access: "viewer",
        detail: { summary: "The job queue: counts, waiting jobs, recent runs and the tasks known" },
        response: { 200: JobsReply, ...errorReplies(401, 403) },
      },
    )
    .post(
      "/api/v1/jobs/:task/run",
      async ({ params, set, request }) => {
        const jobId = await runJobNow(database, catalog, params.task);
        noteAudit(request, { details: { job_id: jobId } });
        set.status = 202;
        return { data: { job_id: jobId, task: params.task } };
      },
      {
        access: "admin",
        detail: { summary: "Queue a task to run now" },
        params: JobTaskParams,
        response: { 202: JobQueuedReply, ...errorReplies(400, 401, 403, 404, 413) },
      },
    );
}
