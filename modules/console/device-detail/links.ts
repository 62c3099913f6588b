/** A tab of the device page, with extra query parameters (`a=1&b=2`). */
export function tabUrl(id: string, tab: string, extra = ""): string {
  return tab === "overview"
    ? `/devices/${id}${extra ? `?${extra}` : ""}`
    : `/devices/${id}?tab=${tab}${extra ? `&${extra}` : ""}`;
}
