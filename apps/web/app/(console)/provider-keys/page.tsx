import type { Metadata } from "next";
import { ProviderKeysView } from "./provider-keys-view.tsx";

export const metadata: Metadata = { title: "Provider keys" };

export default function ProviderKeysPage() {
  return <ProviderKeysView />;
}
