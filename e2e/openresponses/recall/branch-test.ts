// Runs branchTemplates (branch-tests.ts) with the suite's runAllTests and
// prints the report third_party/bin/compliance-test.ts --json prints:
//
//	node --import tsx recall/branch-test.ts --base-url URL --api-key KEY
//
// It exits 1 when a test failed.

import {
  runAllTests,
  type TestConfig,
  type TestResult,
} from "../third_party/src/lib/compliance-tests";
import { branchTemplates } from "./branch-tests";

function arg(name: string): string {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? process.argv[i + 1] : undefined;
  if (!v) {
    console.error(`${name} is required`);
    process.exit(2);
  }
  return v;
}

async function main() {
  const config: TestConfig = {
    baseUrl: arg("--base-url"),
    apiKey: arg("--api-key"),
    model: "gpt-4o-mini",
    authHeaderName: "Authorization",
    useBearerPrefix: true,
    runtime: "server",
  };
  const results: TestResult[] = await runAllTests(
    config,
    () => {},
    branchTemplates,
  );
  const count = (s: TestResult["status"]) =>
    results.filter((r) => r.status === s).length;
  const summary = {
    passed: count("passed"),
    failed: count("failed"),
    skipped: count("skipped"),
    total: results.length,
  };
  console.log(JSON.stringify({ summary, results }, null, 2));
  process.exit(summary.failed > 0 ? 1 : 0);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
