// Forwarded to apps/api unchanged (see lib/api-proxy.ts).
import { proxyToApi } from "../../../lib/api-proxy.ts";

export const dynamic = "force-dynamic";

export {
  proxyToApi as GET,
  proxyToApi as HEAD,
  proxyToApi as POST,
  proxyToApi as PUT,
  proxyToApi as PATCH,
  proxyToApi as DELETE,
};
