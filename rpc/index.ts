/** Public API of rpc/ (transports, typed services, console kit, /rpcz). Other folders import rpc/ only through this file. */
export * from './types';
export * from './proto';
export * from './frame-codec';
export * from './rpc-flags';
export * from './handler-registry';
export * from './ws-server';
export * from './ws-client';
export * from './ws-transport';
export * from './sim-transport';
export * from './json';
export * from './html';
export * from './metrics';
export * from './web-server';
export * from './service-methods';
export * from './rpcz';
export * from './peer-client';
export * from './varint';
