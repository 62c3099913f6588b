import nodemailer from "nodemailer";
import type { Config } from "../../platform/config";

export interface EmailMessage {
  to: string[];
  subject: string;
  text: string;
  html: string;
}

/** Sends one email over SMTP_URL (nodemailer); 10 s connection and greeting limits. */
export async function sendEmail(
  config: Config,
  message: EmailMessage,
): Promise<{ ok: true } | { ok: false; error: string }> {
  if (!config.smtpUrl) return { ok: false, error: "SMTP_URL is not set" };
  const url = new URL(config.smtpUrl);
  url.searchParams.set("connectionTimeout", "10000");
  url.searchParams.set("greetingTimeout", "10000");
  url.searchParams.set("socketTimeout", "20000");
  const transport = nodemailer.createTransport(url.toString());
  try {
    await transport.sendMail({ from: config.smtpFrom, ...message });
    return { ok: true };
  } catch (error) {
    return {
      ok: false,
      error: `SMTP: ${(error instanceof Error ? error.message : String(error)).slice(0, 300)}`,
    };
  } finally {
    transport.close();
  }
}
