// The saved views page (`/views`): every view with a link to its devices, and (operators) the forms to
// save, change and delete one.
import { CsrfField, PageHead, PostButton, Time } from "../../../ui/components";
import { Layout, type PageContext } from "../../../ui/layout";
import { Card, DataTable } from "../../../ui/table";
import { QUERY_MAX_LENGTH } from "../query/parse";
import { type SavedView, VIEW_NAME_MAX } from "../views";

export interface ViewsPageProps {
  views: SavedView[];
  canManage: boolean;
}

function ViewForm(props: { ctx: PageContext; action: string; view?: SavedView; submit: string }) {
  const id = props.view?.id ?? "new";
  return (
    <form class="inline-form view-form" method="post" action={props.action} data-view-form={id}>
      <CsrfField token={props.ctx.csrfToken} />
      <label>
        <span>Name</span>
        <input
          type="text"
          name="name"
          required
          maxlength={String(VIEW_NAME_MAX)}
          value={props.view?.name ?? ""}
        />
      </label>
      <label>
        <span>Query</span>
        <input
          type="text"
          name="query"
          class="mono"
          maxlength={String(QUERY_MAX_LENGTH)}
          value={props.view?.query ?? ""}
          placeholder="tag:site=berlin status:online"
          spellcheck="false"
        />
      </label>
      <button class="btn small primary" type="submit" safe>
        {props.submit}
      </button>
    </form>
  );
}

export function ViewsPage({ ctx, props }: { ctx: PageContext; props: ViewsPageProps }) {
  return (
    <Layout ctx={ctx} title="Saved views">
      <PageHead
        title="Saved views"
        subtitle="Named device queries shared by the team. A view's devices are whoever matches now."
      >
        <a class="btn" href="/devices">
          Devices
        </a>
      </PageHead>
      <Card title="Views">
        <DataTable
          id="views-table"
          rows={props.views}
          empty="No saved views yet. Search the device list and save the query, or add one below."
          stackOnPhone
          rowAttributes={(view) => ({ "data-view-id": view.id })}
          columns={[
            {
              header: "Name",
              render: (view) => (
                <a href={`/devices?view=${encodeURIComponent(view.id)}`} safe>
                  {view.name}
                </a>
              ),
            },
            { header: "Query", class: "mono", text: (view) => view.query || "(every device)" },
            { header: "Saved by", class: "hide-sm", text: (view) => view.createdBy },
            { header: "Changed", class: "hide-sm", render: (view) => <Time value={view.updatedAt} /> },
            ...(props.canManage
              ? [
                  {
                    header: "Actions",
                    hiddenHeader: true,
                    class: "row-actions",
                    render: (view: SavedView) => (
                      <>
                        <details>
                          <summary class="btn small">Edit</summary>
                          <ViewForm ctx={ctx} action={`/views/${view.id}`} view={view} submit="Save" />
                        </details>
                        <PostButton
                          action={`/views/${view.id}/delete`}
                          csrfToken={ctx.csrfToken}
                          label="Delete"
                          tone="danger"
                          confirm={`Delete the view "${view.name}"? Its devices are not changed.`}
                        />
                      </>
                    ),
                  },
                ]
              : []),
          ]}
        />
      </Card>
      {props.canManage ? (
        <Card title="New view">
          <ViewForm ctx={ctx} action="/views" submit="Save view" />
        </Card>
      ) : (
        ""
      )}
    </Layout>
  );
}
