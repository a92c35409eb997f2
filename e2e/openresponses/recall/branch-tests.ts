// Recall's copies of the compliance tests the Open Responses project keeps
// on open branches (previous-response-id, function-call-roundtrip,
// file-input), written from their descriptions and checked against a
// version of the project's text seen in a code index (see ../README.md):
// the same requests. Each checks
// every Response it gets as the suite does: against the project's own
// ResponseResource schema (the vendored zod), status completed, an
// output; and what the branch test is about.

import type { z } from "zod";
import { responseResourceSchema } from "../third_party/src/generated/kubb/zod/responseResourceSchema";
import type {
  TestConfig,
  TestResult,
  TestTemplate,
} from "../third_party/src/lib/compliance-tests";

type ResponseResource = z.infer<typeof responseResourceSchema>;

// A test's requests, made in order; each returns the checked Response.
type Step = (
  config: TestConfig,
  previous: ResponseResource[],
) => Record<string, unknown>;

// The suite's file-input PDF: a one-page document, as a data: URL.
const pdfData =
  "data:application/pdf;base64,JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PC9UeXBlL0NhdGFsb2c+PgplbmRvYmoKdHJhaWxlcgo8PC9Sb290IDEgMCBSPj4KJSVFT0YK";

const weatherTool = {
  type: "function",
  name: "get_weather",
  description: "Get the current weather for a location",
  parameters: {
    type: "object",
    properties: {
      location: {
        type: "string",
        description: "The city and state, e.g. San Francisco, CA",
      },
    },
    required: ["location"],
  },
};

async function post(config: TestConfig, body: Record<string, unknown>) {
  const auth = config.useBearerPrefix
    ? `Bearer ${config.apiKey}`
    : config.apiKey;
  const res = await fetch(`${config.baseUrl.replace(/\/$/, "")}/responses`, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      [config.authHeaderName]: auth,
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) {
    throw new Error(`HTTP ${res.status}: ${text}`);
  }
  return JSON.parse(text) as unknown;
}

// runSteps makes each request, checks each answer against the schema and
// check, and returns the test's result: failed at the first request whose
// answer is not a valid Response.
function runSteps(
  steps: Step[],
  check: (responses: ResponseResource[]) => string[],
): TestTemplate["run"] {
  return async (config, template) => {
    const start = Date.now();
    const requests: unknown[] = [];
    const responses: ResponseResource[] = [];
    const result = (errors: string[], response?: unknown): TestResult => ({
      id: template.id,
      name: template.name,
      description: template.description,
      status: errors.length === 0 ? "passed" : "failed",
      duration: Date.now() - start,
      request: requests,
      response: response ?? responses,
      errors,
    });
    try {
      for (const [i, step] of steps.entries()) {
        const body = step(config, responses);
        requests.push(body);
        const raw = await post(config, body);
        const parsed = responseResourceSchema.safeParse(raw);
        if (!parsed.success) {
          return result(
            parsed.error.issues.map(
              (issue) =>
                `Request ${i + 1}: ${issue.path.length > 0 ? issue.path.join(".") : "(root)"}: ${issue.message}`,
            ),
            raw,
          );
        }
        const r = parsed.data;
        const errors: string[] = [];
        if (r.status !== "completed") {
          errors.push(`Request ${i + 1}: status "${r.status}", want "completed"`);
        }
        if (!r.output || r.output.length === 0) {
          errors.push(`Request ${i + 1}: the Response has no output items`);
        }
        if (errors.length > 0) {
          return result(errors, raw);
        }
        responses.push(r);
      }
      return result(check(responses));
    } catch (error) {
      return result([error instanceof Error ? error.message : String(error)]);
    }
  };
}

export const branchTemplates: TestTemplate[] = [
  {
    id: "previous-response-id",
    name: "Previous Response ID",
    description:
      "A second request names only previous_response_id and its new input; both Responses valid, the second naming the first",
    getRequest: () => ({}),
    run: runSteps(
      [
        (config) => ({
          model: config.model,
          input: "Remember this code word: papaya. Reply with only OK.",
        }),
        (config, [first]) => ({
          model: config.model,
          previous_response_id: first.id,
          input: "What code word did I ask you to remember?",
        }),
      ],
      ([first, second]) =>
        second.previous_response_id === first.id
          ? []
          : [
              `Request 2: previous_response_id ${JSON.stringify(second.previous_response_id)}, want ${JSON.stringify(first.id)}`,
            ],
    ),
  },
  {
    id: "function-call-roundtrip",
    name: "Function Call Round Trip",
    description:
      "A function call forced by tool_choice, then its function_call_output chained by previous_response_id, answered completed",
    getRequest: () => ({}),
    run: runSteps(
      [
        (config) => ({
          model: config.model,
          input: "Use the weather tool to get the temperature in San Francisco.",
          tools: [weatherTool],
          tool_choice: { type: "function", name: "get_weather" },
        }),
        (config, [first]) => {
          const call = first.output.find((item) => item.type === "function_call");
          if (!call || !("call_id" in call)) {
            throw new Error("Request 1: no function_call in the output");
          }
          return {
            model: config.model,
            previous_response_id: first.id,
            input: [
              {
                type: "function_call_output",
                call_id: call.call_id,
                output: "64 degrees and clear",
              },
            ],
          };
        },
      ],
      ([, second]) =>
        second.output.some((item) => item.type === "message")
          ? []
          : ["Request 2: no message answering the function's output"],
    ),
  },
  {
    id: "file-input",
    name: "File Input",
    description: "Send a PDF as input_file in user content",
    getRequest: () => ({}),
    run: runSteps(
      [
        (config) => ({
          model: config.model,
          input: [
            {
              type: "message",
              role: "user",
              content: [
                { type: "input_text", text: "What is in this file?" },
                { type: "input_file", filename: "x.pdf", file_data: pdfData },
              ],
            },
          ],
        }),
      ],
      () => [],
    ),
  },
];
