#!/usr/bin/env bun
import { runCli } from "./cli.ts";

// Entry point of the compiled agent binary (`bun build --compile agent/main.ts`).
const code = await runCli(process.argv.slice(2));
process.exit(code);
