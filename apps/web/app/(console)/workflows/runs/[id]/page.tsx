import type { Metadata } from "next";
import { WorkflowRunView } from "./workflow-run-view.tsx";

export const metadata: Metadata = { title: "Workflow run" };

export default async function WorkflowRunPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return <WorkflowRunView id={decodeURIComponent(id)} />;
}
