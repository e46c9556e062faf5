// Package rdma moves Gaudi device memory to and from remote peers over
// RDMA. This first part is the Descriptor: how a receiver describes the
// memory a sender may write a transfer into, in a small, versioned,
// binary form that fits RDMA CM private data.
package rdma
