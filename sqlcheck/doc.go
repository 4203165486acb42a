// Package sqlcheck is firedrill's static analyser of SQL text: it reads
// workload scripts, statements and PL/pgSQL function bodies, never a
// timeline, and answers what they lock, write and ask of an index.
//
// The rules in diagnose hand it texts and turn its answers into findings;
// data flows that way only, so sqlcheck imports nothing of firedrill but
// the script language (whose parser and \set evaluation the lock-order
// check runs on paper):
//
//   - Classify reads one command: BEGIN/COMMIT, savepoints, row locks,
//     writes; ParsePLpgSQL does the same for a function body, with its
//     EXCEPTION blocks (subtransactions) and loops.
//   - AnalyzeLockOrder simulates scripts and finds the lock-order
//     inversions that allow a deadlock.
//   - RecommendIndex designs the index a scan's conditions and ORDER BY
//     need; TableClauses, QueryTables and QueryClauses read them from a
//     statement's text when there is no plan.
package sqlcheck
