import type { Metadata } from "next";
import { WalletView } from "./wallet-view.tsx";

export const metadata: Metadata = { title: "Wallet" };

export default function WalletPage() {
  return <WalletView />;
}
