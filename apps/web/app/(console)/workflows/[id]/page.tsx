import type { Metadata } from "next";
import { WorkflowView } from "./workflow-view.tsx";

export const metadata: Metadata = { title: "Workflow" };

export default async function WorkflowPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return <WorkflowView id={decodeURIComponent(id)} />;
}
