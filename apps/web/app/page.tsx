import { Card } from "@cua/ui/card";

export default function Home() {
  return (
    <main className="mx-auto max-w-3xl p-6">
      <h1 className="mb-4 text-2xl font-semibold">Operator console</h1>
      <Card title="API">
        <p>
          The REST API is served under <code>/v1</code>; its reference is at <a className="underline" href="/docs">/docs</a>.
        </p>
      </Card>
    </main>
  );
}
