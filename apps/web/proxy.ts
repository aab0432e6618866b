// Console pages need a session: without the session cookie, go to the sign-in page first (the API still
// validates the cookie on every call; an invalid one is sent back here by the pages themselves).
import { type NextRequest, NextResponse } from "next/server";

export function proxy(req: NextRequest) {
  if (req.cookies.has("svc_session")) return NextResponse.next();
  const url = req.nextUrl.clone();
  const next = req.nextUrl.pathname + req.nextUrl.search;
  url.pathname = "/sign-in";
  url.search = next === "/" ? "" : `?next=${encodeURIComponent(next)}`;
  return NextResponse.redirect(url);
}

export const config = {
  matcher: ["/", "/wallet/:path*", "/keys/:path*", "/provider-keys/:path*", "/machines/:path*", "/runs/:path*"],
};
