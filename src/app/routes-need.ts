/**
 * What a plugin that registers routes needs registered first: the route auth (its onRoute hook
 * checks every route declares who may call it), the OpenAPI document (collected as routes are
 * added), and cross-origin and rate limits (their hooks apply to routes added after them).
 */
export const ROUTES_NEED = ['http', 'auth', 'openapi', 'request-policy']
