// Checks every response a test server sends against the schema its route documents (the same
// schemas openapi.json is made of, src/platform/http/schemas.ts and the slices' schemas-*.ts), so the document cannot drift from the
// behaviour. startTestServer collects the mismatches and its close() fails the suite with them.
// REMESSA_TEST_CHECK_RESPONSES=0 turns the check off (to debug something else).
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { FEATURE_SCHEMAS, type SentResponse } from '../../src/platform/http/app.js';
import { COMPONENTS } from '../../src/platform/http/schemas.js';

export const CHECK_RESPONSES = process.env['REMESSA_TEST_CHECK_RESPONSES'] !== '0';

const ajv = new Ajv2020({ strict: false, allErrors: true });
for (const schema of [...COMPONENTS, ...FEATURE_SCHEMAS]) ajv.addSchema(schema);
const compiled = new WeakMap<object, ValidateFunction>();
const validator = (schema: object) => {
  let v = compiled.get(schema);
  if (!v) {
    v = ajv.compile(schema);
    compiled.set(schema, v);
  }
  return v;
};

interface Documented {
  description?: string;
  content?: Record<string, { schema?: object }>;
}

/** Why `r` does not match its documentation, or null when it does. */
export function responseProblem(r: SentResponse, apiPath: string): string | null {
  const isJson = /^application\/json\b/i.test(r.contentType ?? '');
  const schema = r.schema as { hide?: boolean; response?: Record<string, Documented> } | undefined;
  if (schema?.hide) return null;
  const where = `${r.method} ${r.route ?? '(no route)'} ${r.status}`;
  let body: unknown;
  if (isJson && typeof r.payload === 'string' && r.payload !== '') {
    try {
      body = JSON.parse(r.payload);
    } catch {
      return `${where}: the JSON body does not parse`;
    }
  }
  const check = (s: object) => {
    if (body === undefined) return null;
    const v = validator(s);
    return v(body) ? null : `${where}: ${ajv.errorsText(v.errors)} in ${String(r.payload).slice(0, 300)}`;
  };
  // No route (404, 405): the error envelope.
  if (r.route === undefined) return isJson ? check({ $ref: 'ErrorEnvelope' }) : null;
  const inApi = r.route === apiPath || r.route.startsWith(`${apiPath}/`);
  if (!schema?.response) return inApi && isJson ? `${where}: the route documents no responses` : null;
  const family = `${String(r.status)[0]}XX`;
  const documented =
    schema.response[String(r.status)] ??
    schema.response[family] ??
    schema.response[family.toLowerCase()] ??
    schema.response['default'];
  if (!documented) return `${where}: status not documented`;
  if (r.method === 'HEAD' || body === undefined) return null;
  const media = documented.content?.['application/json']?.schema;
  if (!media) return `${where}: a JSON body where none is documented`;
  return check(media);
}
