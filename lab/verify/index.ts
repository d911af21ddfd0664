export * from './history';
export * from './linearizability';
export * from './bank-checker';
export * from './set-checker';
export * from './list-append-checker';
export * from './graph';
