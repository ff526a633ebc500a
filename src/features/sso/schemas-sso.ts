// The response shape of POST {base}/auth/oidc/session (docs/sso.md): a component of openapi.json
// (platform/http/app.ts adds it) and what the tests check every answer against.
import { Type } from 'typebox';
import { closed, successFields } from '../../platform/http/schemas.js';

export const SSO_HANDLER = 'handlerAuthSso';

export const SsoSession = Type.Object(
  {
    ...successFields(SSO_HANDLER),
    user: Type.String({ description: 'The account signed in.' }),
    bearer: Type.String({ description: 'A bearer token, as /auth/login gives.' }),
    logoutUrl: Type.Optional(
      Type.String({
        description:
          "The identity provider's end-session URL (RP-initiated logout): a browser goes there after POST /auth/logout. Absent when the provider offers none.",
      }),
    ),
  },
  { ...closed, $id: 'SsoSession', title: 'Single sign-on session' },
);

export const SSO_SCHEMAS = [SsoSession];
