import type { Metadata } from "next";
import { Suspense } from "react";
import { AuthForm } from "../auth-form.tsx";

export const metadata: Metadata = { title: "Create an account" };

export default function SignUpPage() {
  return (
    <Suspense>
      <AuthForm mode="sign-up" />
    </Suspense>
  );
}
