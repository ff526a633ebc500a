// The package ships no types; this is the part the tests' identity provider uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface GrantInstance {
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    save(): Promise<string>;
  }

  export interface KoaContextWithOidc {
    oidc: {
      client?: { clientId: string };
      session?: { accountId?: string; grantIdFor(clientId: string): string | undefined };
      result?: { consent?: { grantId?: string } };
      provider: Provider;
    };
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    Grant: {
      new (init: { accountId?: string; clientId: string }): GrantInstance;
      find(id: string): Promise<GrantInstance | undefined>;
    };
  }
}
