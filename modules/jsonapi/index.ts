/** The JSON:API machinery other features build their resources with (CONTRIBUTING.md, "Layout"). */
export {
  actorLabel,
  JSONAPI_MEDIA_TYPE,
  JSONAPI_PREFIX,
  jsonApiDocument,
  jsonApiErrorMapper,
  jsonApiNextLink,
  jsonApiPageSize,
  type PageParams,
} from "./document";
