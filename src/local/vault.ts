import { createHmac } from 'node:crypto';
import { z } from 'zod';
import { ConfigurationError, type ValidationIssue } from '../errors.js';
import { id } from '../internal/schemas.js';
import { MAX_SECRET_BINDINGS, type SecretBindingSchema, type SecretFieldId } from '../resources/runs.js';
import { HttpError } from './http.js';

/**
 * The password-manager integrations of the local service's project: local stand-ins for vaults
 * connected under Secrets in the settings. Values are resolved here and typed by the run; they never
 * reach an agent driver, an event, a log line, a result or an error.
 */

const base32 = z
  .string()
  .regex(/^[A-Z2-7]+=*$/i, 'must be a base32 TOTP secret (A-Z, 2-7)')
  .transform((secret) => secret.replace(/=+$/, '').toUpperCase());

const VaultItemSchema = z.strictObject({
  /** UUID of the item, as a binding's `source.itemId` names it. */
  id,
  /** UUID of the vault the item is in, as `opVaultId` and a binding's `source.vaultId` name it. */
  vaultId: id,
  /** Names the item's aliases: `<title>_username`, `<title>_password`, `<title>_svc_2fa_code`. */
  title: z.string().min(1, 'must not be empty'),
  username: z.string().min(1).optional(),
  password: z.string().min(1).optional(),
  /** The base32 secret of a TOTP field (RFC 6238: HMAC-SHA1, 30 s, 6 digits). */
  totp: base32.optional(),
});

const IntegrationSchema = z.strictObject({
  id: z.string().min(1, 'must not be empty'),
  /** Vault access needs exactly one active integration. @default true */
  active: z.boolean().default(true),
  items: z.array(VaultItemSchema).default([]),
});

export const LocalVaultSchema = z.strictObject({
  integrations: z.array(IntegrationSchema).default([]),
  /** A zero-data-retention project: vault access is refused (403). @default false */
  zeroDataRetention: z.boolean().default(false),
});

/** The `vault` option of `startLocalService`: the project's password-manager integrations. */
export type LocalVaultOptions = z.input<typeof LocalVaultSchema>;
type VaultItem = z.output<typeof VaultItemSchema>;
type SecretBinding = z.output<typeof SecretBindingSchema>;

/** Where a value may be typed: `host` and its subdomains, or only its subdomains (a `*.host` pattern). */
export interface DomainRule {
  host: string;
  subdomainsOnly: boolean;
}

/** One secret a run may type, known to the driver only by its alias. */
export interface ResolvedSecret {
  alias: string;
  field: SecretFieldId;
  allowed: readonly DomainRule[];
  /** The value now: for `one-time-password`, the current TOTP code. */
  value(): string;
  /** The fixed values behind it (a password, a TOTP seed), so they can be cut out of anything shown. */
  readonly staticValues: readonly string[];
}

/** The alias suffixes of a vault item's fields. */
const SUFFIX: Record<SecretFieldId, string> = {
  username: '_username',
  password: '_password',
  'one-time-password': '_svc_2fa_code',
};

export class Vault {
  readonly #config: z.output<typeof LocalVaultSchema>;

  constructor(config: z.output<typeof LocalVaultSchema>) {
    this.#config = config;
  }

  /**
   * The secrets a run asked for: a whole vault (`opVaultId`, typed only on `vaultDomains`) and single
   * bindings. Refusals: 403 on a zero-data-retention project, 400 without exactly one active
   * integration for a whole vault, 422 for what cannot be found or more than 10 bindings in all.
   */
  resolve(request: {
    opVaultId?: string | undefined;
    vaultDomains?: readonly DomainRule[] | undefined;
    bindings?: readonly SecretBinding[] | undefined;
    /** Where the vault id came from in the body, for 422 `loc`. */
    vaultField: string;
  }): ResolvedSecret[] {
    const bindings = request.bindings ?? [];
    if (request.opVaultId === undefined && bindings.length === 0) return [];
    if (this.#config.zeroDataRetention) {
      throw new HttpError(403, 'Vault access is unavailable for zero-data-retention projects');
    }
    const secrets: ResolvedSecret[] = [];
    if (request.opVaultId !== undefined) {
      const active = this.#config.integrations.filter((integration) => integration.active);
      const [integration] = active;
      if (active.length !== 1 || integration === undefined) {
        throw new HttpError(
          400,
          `Vault access requires exactly one active password-manager integration on the project; ${active.length} ${active.length === 1 ? 'is' : 'are'} active`,
        );
      }
      const items = integration.items
        .filter((item) => item.vaultId === request.opVaultId)
        .sort((a, b) => a.title.localeCompare(b.title));
      if (items.length === 0) {
        throw invalid([
          {
            loc: ['body', request.vaultField],
            msg: 'no vault with this id in the active password-manager integration',
            type: 'value_error',
          },
        ]);
      }
      for (const item of items) {
        for (const field of fieldsOf(item)) {
          secrets.push(secretOf(item, field, `${item.title}${SUFFIX[field]}`, request.vaultDomains ?? []));
        }
      }
    }
    const vaultAliases = new Set(secrets.map((secret) => secret.alias));
    const issues: ValidationIssue[] = [];
    bindings.forEach((binding, index) => {
      const at = ['body', 'secretBindings', index];
      const { source } = binding;
      const integration = this.#config.integrations.find((i) => i.id === source.integrationId && i.active);
      const item = integration?.items.find((i) => i.id === source.itemId && i.vaultId === source.vaultId);
      if (vaultAliases.has(binding.alias)) {
        issues.push({ loc: [...at, 'alias'], msg: 'repeats an alias of the vault', type: 'value_error' });
      } else if (!integration) {
        issues.push({
          loc: [...at, 'source', 'integrationId'],
          msg: 'no active password-manager integration with this id',
          type: 'value_error',
        });
      } else if (!item) {
        issues.push({
          loc: [...at, 'source', 'itemId'],
          msg: 'no item with this id in this vault of the integration',
          type: 'value_error',
        });
      } else if (!fieldsOf(item).includes(source.fieldId)) {
        issues.push({
          loc: [...at, 'source', 'fieldId'],
          msg: `the item has no ${source.fieldId} field`,
          type: 'value_error',
        });
      } else {
        const allowed = binding.allowedDomains.map((host) => ({ host, subdomainsOnly: false }));
        secrets.push(secretOf(item, source.fieldId, binding.alias, allowed));
      }
    });
    if (issues.length > 0) throw invalid(issues);
    const fromVault = vaultAliases.size;
    if (fromVault + bindings.length > MAX_SECRET_BINDINGS) {
      throw invalid([
        {
          loc: ['body', 'secretBindings'],
          msg: `vault fields (${fromVault}) and secretBindings (${bindings.length}) exceed the limit of ${MAX_SECRET_BINDINGS} bindings per run`,
          type: 'too_big',
        },
      ]);
    }
    return secrets;
  }
}

function invalid(issues: ValidationIssue[]): HttpError {
  return new HttpError(422, issues);
}

function fieldsOf(item: VaultItem): SecretFieldId[] {
  const fields: SecretFieldId[] = [];
  if (item.username !== undefined) fields.push('username');
  if (item.password !== undefined) fields.push('password');
  if (item.totp !== undefined) fields.push('one-time-password');
  return fields;
}

function secretOf(
  item: VaultItem,
  field: SecretFieldId,
  alias: string,
  allowed: readonly DomainRule[],
): ResolvedSecret {
  const { username, password, totp: seed } = item;
  if (field === 'one-time-password' && seed !== undefined) {
    return { alias, field, allowed, value: () => totp(seed), staticValues: [seed] };
  }
  const value = (field === 'username' ? username : password) ?? '';
  return { alias, field, allowed, value: () => value, staticValues: [value] };
}

/** Parses `example.com` (the host and its subdomains) and `*.example.com` (only its subdomains). */
export function domainRule(pattern: string): DomainRule {
  return pattern.startsWith('*.')
    ? { host: pattern.slice(2), subdomainsOnly: true }
    : { host: pattern, subdomainsOnly: false };
}

/** Whether a page's host is one where a value may be typed. */
export function hostAllowed(host: string, rules: readonly DomainRule[]): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return rules.some((rule) => (!rule.subdomainsOnly && name === rule.host) || name.endsWith(`.${rule.host}`));
}

/** RFC 4648 base32, as TOTP secrets are written. */
export function base32Decode(text: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  const bytes: number[] = [];
  for (const char of text.replace(/=+$/, '').toUpperCase()) {
    const index = alphabet.indexOf(char);
    if (index === -1) throw new Error('not base32');
    value = (value << 5) | index;
    bits += 5;
    if (bits >= 8) {
      bytes.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(bytes);
}

/**
 * The TOTP code (RFC 6238) of a base32 secret at a time: HMAC over the count of `periodSec` steps
 * since the epoch, dynamically truncated (RFC 4226) to `digits` digits.
 */
export function totp(
  secretBase32: string,
  options: {
    atMs?: number;
    digits?: number;
    periodSec?: number;
    algorithm?: 'sha1' | 'sha256' | 'sha512';
  } = {},
): string {
  const { atMs = Date.now(), digits = 6, periodSec = 30, algorithm = 'sha1' } = options;
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(atMs / 1000 / periodSec)));
  const mac = createHmac(algorithm, base32Decode(secretBase32)).update(counter).digest();
  const offset = (mac[mac.length - 1] as number) & 0x0f;
  const code = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(code % 10 ** digits).padStart(digits, '0');
}

/** The vault of the `vault` option, validated; bad options are a `ConfigurationError`. */
export function vaultFrom(options: LocalVaultOptions = {}): Vault {
  const parsed = LocalVaultSchema.safeParse(options);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ');
    throw new ConfigurationError(`startLocalService: invalid vault: ${problems}`);
  }
  return new Vault(parsed.data);
}
