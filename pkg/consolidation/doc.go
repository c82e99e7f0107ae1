// Package consolidation plans moves that make a cluster cheaper while its
// pods keep running: delete a node whose pods fit on the others, whatever
// its utilization, or replace nodes by fewer or cheaper new ones.
package consolidation
