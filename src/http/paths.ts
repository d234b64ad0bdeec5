/** The Docker MCP Gateway interceptor route (docs/bindings/docker-gateway.md): it answers every error as an isError result, never problem+json. */
export const INTERCEPTOR_PATH = '/v1/interceptors/docker-mcp-gateway';
