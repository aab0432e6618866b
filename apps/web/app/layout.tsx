import type { Metadata, Viewport } from "next";
import type { ReactNode } from "react";
import { Providers } from "./providers.tsx";
import "./globals.css";

export const metadata: Metadata = {
  title: { default: "Operator console", template: "%s · Operator console" },
  description: "Computer-use agent service console",
};

export const viewport: Viewport = { width: "device-width", initialScale: 1 };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body className="min-h-screen bg-white text-slate-900 antialiased dark:bg-slate-950 dark:text-slate-100">
        <Providers>{children}</Providers>
      </body>
    </html>
  );
}
