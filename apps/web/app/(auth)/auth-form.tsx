"use client";
import { Button } from "@cua/ui/button";
import { ErrorBox } from "@cua/ui/error-box";
import { Field } from "@cua/ui/field";
import { Input } from "@cua/ui/input";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter, useSearchParams } from "next/navigation";
import { type FormEvent, useState } from "react";
import { errorInfo, friendlyMessage } from "../../lib/errors.ts";
import { useTRPC } from "../../lib/trpc.ts";

/** Where to go after signing in: a local path only (never another site). */
function safeNext(next: string | null): string {
  return next?.startsWith("/") && !next.startsWith("//") ? next : "/";
}

export function AuthForm({ mode }: { mode: "sign-in" | "sign-up" }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const router = useRouter();
  const params = useSearchParams();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [accountName, setAccountName] = useState("");
  const done = async () => {
    await qc.invalidateQueries();
    router.replace(safeNext(params.get("next")));
  };
  const signIn = useMutation(trpc.console.auth.signIn.mutationOptions({ onSuccess: done }));
  const signUp = useMutation(trpc.console.auth.signUp.mutationOptions({ onSuccess: done }));
  const m = mode === "sign-in" ? signIn : signUp;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (mode === "sign-in") signIn.mutate({ email, password });
    else signUp.mutate({ email, password, account_name: accountName.trim() || undefined });
  };
  const err = m.error ? errorInfo(m.error) : null;
  const fieldError = (name: string) => err?.details?.find((d) => d.path === `body.${name}`)?.message;
  const title = mode === "sign-in" ? "Sign in" : "Create an account";
  return (
    <div className="rounded-lg border border-slate-200 p-6 shadow-sm dark:border-slate-800">
      <h1 className="mb-4 text-xl font-semibold">{title}</h1>
      <form onSubmit={submit} className="space-y-4" noValidate>
        {m.error && (
          <ErrorBox
            title={mode === "sign-in" ? "Could not sign in" : "Could not create the account"}
            message={friendlyMessage(m.error)}
            code={err?.code}
          />
        )}
        <Field label="Email" error={fieldError("email")}>
          <Input
            type="email"
            name="email"
            autoComplete="email"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
        </Field>
        <Field
          label="Password"
          hint={mode === "sign-up" ? "At least 8 characters." : undefined}
          error={fieldError("password")}
        >
          <Input
            type="password"
            name="password"
            autoComplete={mode === "sign-in" ? "current-password" : "new-password"}
            required
            minLength={mode === "sign-up" ? 8 : undefined}
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </Field>
        {mode === "sign-up" && (
          <Field label="Account name (optional)" hint="Defaults to your email's domain.">
            <Input
              name="account_name"
              autoComplete="organization"
              value={accountName}
              onChange={(e) => setAccountName(e.target.value)}
            />
          </Field>
        )}
        <Button type="submit" className="w-full" loading={m.isPending}>
          {title}
        </Button>
      </form>
      <p className="mt-4 text-center text-sm text-slate-600 dark:text-slate-400">
        {mode === "sign-in" ? (
          <>
            No account yet?{" "}
            <Link className="font-medium text-indigo-700 underline dark:text-indigo-300" href="/sign-up">
              Create one
            </Link>
          </>
        ) : (
          <>
            Have an account?{" "}
            <Link className="font-medium text-indigo-700 underline dark:text-indigo-300" href="/sign-in">
              Sign in
            </Link>
          </>
        )}
      </p>
    </div>
  );
}
