/** The Docker MCP Gateway interceptor route (contract section 10): it answers every error as an isError result, never problem+json. */
export const INTERCEPTOR_PATH = '/v1/interceptors/docker-mcp-gateway';
