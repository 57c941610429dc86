// A minimal io_uring submission/completion ring over the raw syscalls (no liburing needed).
//
// Why raw: liburing is a Debian package a fresh clone does not have, while <linux/io_uring.h>
// ships with the kernel headers every build machine has. Only what DiskReader needs is here:
// set up a ring, queue READV requests, submit and wait for completions. Built only when the
// header exists (GNNREPRO_HAVE_IO_URING); at run time `Uring::open` returns nullptr when the
// kernel refuses (old kernel, io_uring disabled by sysctl or seccomp), and the caller falls back
// to a pread thread pool.
#pragma once

#if __has_include(<linux/io_uring.h>)
#define GNNREPRO_HAVE_IO_URING 1
#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>

namespace gnnrepro {

class Uring {
 public:
  // A ring with room for `entries` requests in flight, or nullptr (errno set) if the kernel
  // has no io_uring or refuses this process one.
  static std::unique_ptr<Uring> open(unsigned entries) {
    io_uring_params p{};
    const int fd = static_cast<int>(syscall(__NR_io_uring_setup, entries, &p));
    if (fd < 0) return nullptr;
    std::unique_ptr<Uring> ring(new Uring());
    ring->fd_ = fd;
    ring->sq_bytes_ = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    ring->cq_bytes_ = p.cq_off.cqes + p.cq_entries * sizeof(io_uring_cqe);
    const bool single = p.features & IORING_FEAT_SINGLE_MMAP;
    if (single) ring->sq_bytes_ = ring->cq_bytes_ = std::max(ring->sq_bytes_, ring->cq_bytes_);
    ring->sq_ptr_ = mmap(nullptr, ring->sq_bytes_, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
    if (ring->sq_ptr_ == MAP_FAILED) { ring->sq_ptr_ = nullptr; return nullptr; }
    if (single) {
      ring->cq_ptr_ = ring->sq_ptr_;
    } else {
      ring->cq_ptr_ = mmap(nullptr, ring->cq_bytes_, PROT_READ | PROT_WRITE,
                           MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_CQ_RING);
      if (ring->cq_ptr_ == MAP_FAILED) { ring->cq_ptr_ = nullptr; return nullptr; }
    }
    ring->sqes_bytes_ = p.sq_entries * sizeof(io_uring_sqe);
    void* sqes = mmap(nullptr, ring->sqes_bytes_, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
    if (sqes == MAP_FAILED) return nullptr;
    ring->sqes_ = static_cast<io_uring_sqe*>(sqes);
    auto* sq = static_cast<char*>(ring->sq_ptr_);
    auto* cq = static_cast<char*>(ring->cq_ptr_);
    ring->sq_tail_ = reinterpret_cast<unsigned*>(sq + p.sq_off.tail);
    ring->sq_mask_ = *reinterpret_cast<unsigned*>(sq + p.sq_off.ring_mask);
    ring->sq_array_ = reinterpret_cast<unsigned*>(sq + p.sq_off.array);
    ring->cq_head_ = reinterpret_cast<unsigned*>(cq + p.cq_off.head);
    ring->cq_tail_ = reinterpret_cast<unsigned*>(cq + p.cq_off.tail);
    ring->cq_mask_ = *reinterpret_cast<unsigned*>(cq + p.cq_off.ring_mask);
    ring->cqes_ = reinterpret_cast<io_uring_cqe*>(cq + p.cq_off.cqes);
    ring->entries_ = p.sq_entries;
    return ring;
  }

  ~Uring() {
    if (sqes_ != nullptr) munmap(sqes_, sqes_bytes_);
    if (cq_ptr_ != nullptr && cq_ptr_ != sq_ptr_) munmap(cq_ptr_, cq_bytes_);
    if (sq_ptr_ != nullptr) munmap(sq_ptr_, sq_bytes_);
    if (fd_ >= 0) ::close(fd_);
  }
  Uring(const Uring&) = delete;
  Uring& operator=(const Uring&) = delete;

  unsigned entries() const { return entries_; }

  // Queue a readv of `iov` from `fd` at `offset`, tagged `tag` (returned with its completion).
  // The caller keeps at most entries() requests queued or in flight.
  void queue_readv(int fd, const iovec* iov, uint64_t offset, uint64_t tag) {
    const unsigned tail = *sq_tail_;  // only this thread writes the tail
    const unsigned idx = tail & sq_mask_;
    io_uring_sqe* sqe = &sqes_[idx];
    *sqe = io_uring_sqe{};
    sqe->opcode = IORING_OP_READV;
    sqe->fd = fd;
    sqe->off = offset;
    sqe->addr = reinterpret_cast<uint64_t>(iov);
    sqe->len = 1;
    sqe->user_data = tag;
    sq_array_[idx] = idx;
    __atomic_store_n(sq_tail_, tail + 1, __ATOMIC_RELEASE);
    ++queued_;
  }

  // Submit what was queued and wait until at least `min_complete` completions are ready.
  // Returns 0 or -errno.
  int submit_and_wait(unsigned min_complete) {
    while (true) {
      const long r = syscall(__NR_io_uring_enter, fd_, queued_, min_complete,
                             min_complete ? IORING_ENTER_GETEVENTS : 0, nullptr, 0);
      if (r >= 0) {
        queued_ -= static_cast<unsigned>(r);
        if (queued_ == 0 || min_complete == 0) return 0;
        continue;  // the kernel took part of the queue: submit the rest
      }
      if (errno == EINTR) continue;
      return -errno;
    }
  }

  // Call f(tag, result) for every completion ready now; returns how many there were.
  template <typename F>
  unsigned reap(F&& f) {
    unsigned head = *cq_head_;
    const unsigned tail = __atomic_load_n(cq_tail_, __ATOMIC_ACQUIRE);
    unsigned n = 0;
    for (; head != tail; ++head, ++n) {
      const io_uring_cqe& cqe = cqes_[head & cq_mask_];
      f(cqe.user_data, cqe.res);
    }
    __atomic_store_n(cq_head_, head, __ATOMIC_RELEASE);
    return n;
  }

 private:
  Uring() = default;
  int fd_ = -1;
  void* sq_ptr_ = nullptr;
  void* cq_ptr_ = nullptr;
  size_t sq_bytes_ = 0, cq_bytes_ = 0, sqes_bytes_ = 0;
  io_uring_sqe* sqes_ = nullptr;
  unsigned* sq_tail_ = nullptr;
  unsigned* sq_array_ = nullptr;
  unsigned sq_mask_ = 0;
  unsigned* cq_head_ = nullptr;
  unsigned* cq_tail_ = nullptr;
  unsigned cq_mask_ = 0;
  io_uring_cqe* cqes_ = nullptr;
  unsigned entries_ = 0;
  unsigned queued_ = 0;
};

}  // namespace gnnrepro
#endif
