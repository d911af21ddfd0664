/**
 * Protobuf schemas at run time. Every `.proto` file in rpc/protos/ is loaded into one protobufjs Root
 * (package `tessera`), so another part adds its service by dropping a file there and calling
 * `protoCodec` / `defineMethod` with the full type names.
 *
 * Decoded messages are plain objects with a fixed shape: 64-bit integers are `bigint`, enums are their
 * names, bytes are Buffers, missing scalars carry their proto3 default, repeated fields are arrays and
 * absent sub-messages are `undefined` (not null), so callers never meet protobufjs `Long`s or classes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as protobuf from 'protobufjs';
import { DbError, ErrorCode } from '../common';
import type { Codec, MethodDef, OnewayDef } from './types';

const PACKAGE_ROOT_LEVELS_MAX = 6;
const PROTO_DIR = path.join('rpc', 'protos');

/** Walk up from this file (rpc/ when run from source, dist/rpc/ when compiled) to tessera's package.json. */
export function protoDir(): string {
  let dir = __dirname;
  for (let i = 0; i < PACKAGE_ROOT_LEVELS_MAX; i++) {
    const pj = path.join(dir, 'package.json');
    if (fs.existsSync(pj)) {
      try {
        const name: unknown = (JSON.parse(fs.readFileSync(pj, 'utf8')) as Record<string, unknown>)['name'];
        if (name === 'tessera') return path.join(dir, PROTO_DIR);
      } catch {
        // not our package.json; keep climbing
      }
    }
    dir = path.dirname(dir);
  }
  throw new DbError(ErrorCode.NOT_FOUND, `cannot find tessera's package.json above ${__dirname} (needed for ${PROTO_DIR})`);
}

let rootCache: protobuf.Root | undefined;

/** The one Root holding every schema of rpc/protos/ (loaded on first use, then cached). */
export function protoRoot(): protobuf.Root {
  if (rootCache) return rootCache;
  const dir = protoDir();
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.proto'))
    .sort()
    .map((f) => path.join(dir, f));
  const root = new protobuf.Root();
  // Imports are written as bare file names ("common.proto"); they all live in the same folder.
  root.resolvePath = (_origin: string, target: string): string => (path.isAbsolute(target) ? target : path.join(dir, path.basename(target)));
  root.loadSync(files, { keepCase: false });
  root.resolveAll();
  rootCache = root;
  return root;
}

export function lookupMessageType(fullTypeName: string): protobuf.Type {
  const name = fullTypeName.startsWith('.') ? fullTypeName.slice(1) : fullTypeName;
  try {
    return protoRoot().lookupType(name);
  } catch (e) {
    throw new DbError(ErrorCode.NOT_FOUND, `protobuf message type ${name} is not defined in ${PROTO_DIR}`, { type: name }, { cause: e });
  }
}

const TO_OBJECT: protobuf.IConversionOptions = {
  longs: BigInt as unknown as protobuf.IConversionOptions['longs'],
  enums: String,
  defaults: true,
  arrays: true,
  objects: true,
};

/** Per type: the sub-message fields whose absent value protobufjs reports as null (we want undefined). */
interface MessageFieldPlan {
  readonly name: string;
  readonly type: protobuf.Type;
  readonly repeated: boolean;
}
const plans = new Map<protobuf.Type, MessageFieldPlan[]>();

function planOf(t: protobuf.Type): MessageFieldPlan[] {
  let p = plans.get(t);
  if (p) return p;
  p = [];
  plans.set(t, p); // set before recursing: types can be recursive
  for (const f of t.fieldsArray) {
    f.resolve();
    if (f.map) continue; // map values of message type are always present
    if (f.resolvedType instanceof protobuf.Type) p.push({ name: f.name, type: f.resolvedType, repeated: f.repeated });
  }
  return p;
}

/** Replace null sub-messages by absence, recursively. Bounded by the (finite) depth of the decoded object. */
function normalize(t: protobuf.Type, o: Record<string, unknown>): void {
  for (const f of planOf(t)) {
    const v = o[f.name];
    if (v === null || v === undefined) {
      delete o[f.name];
    } else if (f.repeated) {
      for (const item of v as Array<Record<string, unknown>>) normalize(f.type, item);
    } else {
      normalize(f.type, v as Record<string, unknown>);
    }
  }
}

/** Encode/decode one message type of rpc/protos/ as plain objects (see the file comment for the shape). */
export function protoCodec<T>(fullTypeName: string): Codec<T> {
  const type = lookupMessageType(fullTypeName);
  return {
    encode(v: T): Uint8Array {
      let msg: protobuf.Message;
      try {
        msg = type.fromObject(v as unknown as Record<string, unknown>);
      } catch (e) {
        throw new DbError(ErrorCode.INVALID_ARGUMENT, `cannot encode ${type.fullName}: ${(e as Error).message}`, { type: type.fullName }, { cause: e });
      }
      return type.encode(msg).finish();
    },
    decode(b: Uint8Array): T {
      let o: Record<string, unknown>;
      try {
        o = type.toObject(type.decode(b), TO_OBJECT);
      } catch (e) {
        throw new DbError(ErrorCode.MALFORMED_FRAME, `payload does not decode as ${type.fullName}: ${(e as Error).message}`, { type: type.fullName }, { cause: e });
      }
      normalize(type, o);
      return o as T;
    },
  };
}

const codecCache = new Map<string, Codec<unknown>>();

function cachedCodec<T>(name: string): Codec<T> {
  let c = codecCache.get(name);
  if (!c) {
    c = protoCodec<unknown>(name);
    codecCache.set(name, c);
  }
  return c as Codec<T>;
}

function qualify(typeName: string): string {
  return typeName.includes('.') ? typeName : `tessera.${typeName}`;
}

/** A request/response method whose messages are protobuf types ("WriteRequestPB" means tessera.WriteRequestPB). */
export function defineMethod<Req, Resp>(service: string, method: string, reqType: string, respType: string): MethodDef<Req, Resp> {
  return { service, method, req: cachedCodec<Req>(qualify(reqType)), resp: cachedCodec<Resp>(qualify(respType)) };
}

/** A one-way message whose payload is a protobuf type. */
export function defineOneway<M>(service: string, method: string, type: string): OnewayDef<M> {
  return { service, method, msg: cachedCodec<M>(qualify(type)) };
}
