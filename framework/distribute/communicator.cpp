#include "framework/distribute/communicator.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <sstream>
#include <thread>
#include <unordered_map>

#include <mpi.h>

#include "framework/core/error.h"
#include "framework/core/logging.h"

namespace ember::distribute::detail {

namespace {

bool g_we_initialised = false;
Communicator* g_world = nullptr;

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || !g_we_initialised) return;
  if (g_world && g_world->broken()) {
    // A collective is still pending here: MPI_Finalize would wait for it. End every worker instead.
    MPI_Abort(MPI_COMM_WORLD, 1);
    return;
  }
  MPI_Finalize();
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

void check_mpi(int code, const std::string& what) {
  EMBER_CHECK(code == MPI_SUCCESS, Unavailable) << what << ": MPI failed: " << mpi_error_text(code);
}

std::string seconds_text(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

}  // namespace

Communicator& Communicator::world() {
  static Communicator* world = [] {
    g_world = new Communicator(true);  // lives until exit: finalize_at_exit reads it
    return g_world;
  }();
  return *world;
}

Communicator& Communicator::local() {
  static Communicator local(false);
  return local;
}

Communicator::Communicator(bool use_mpi) {
  if (!use_mpi) return;
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    // Open MPI runs a non-blocking all-reduce with its libnbc component, whose default schedule for two workers
    // took twice as long as the blocking MPI_Allreduce here; its ring takes as long (bench_distributed). The
    // environment decides when it names an algorithm.
    ::setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
    int provided = 0;
    // Collectives are called from one thread at a time (the training thread, or a traced step's host call).
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    g_we_initialised = true;
    std::atexit(finalize_at_exit);
  }
  // Errors come back as codes (and so as Ember errors) instead of aborting the process.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

const Communicator* Communicator::existing() { return g_world; }

void Communicator::check_usable(const std::string& what) const {
  EMBER_CHECK(!broken_, Unavailable)
      << what << ": an earlier collective operation timed out, so this worker can no longer communicate; end the "
      << "job and restart it (BackupAndRestore resumes training)";
}

namespace {

// The collectives started and not yet waited for, by ticket (0: nothing to wait for). Collectives are called from
// one thread at a time, as MPI_THREAD_SERIALIZED asks.
std::unordered_map<uint64_t, std::vector<MPI_Request>> g_pending;
uint64_t g_last_ticket = 0;

uint64_t track(std::vector<MPI_Request> requests) {
  g_pending.emplace(++g_last_ticket, std::move(requests));
  return g_last_ticket;
}

// MPI's limit on a count: an int.
constexpr size_t kChunk = size_t{1} << 30;

// An all-reduce runs as pieces of at least 2 MiB, at most 16 of them, all started at once (one ticket). Two
// workers on a busy 2-core machine, in a program calling MPI alone (the forms interleaved, 24-30 calls each): one
// MPI_Iallreduce of 16 MB (Open MPI's ring: each worker sums one 8 MB half and passes it on) took 7.1-12.0 ms at
// best and 11.6-21.8 in median over three runs, its 8 pieces of 2 MB 6.1-11.9 and 8.0-18.7; 256 MB in 16 pieces
// 168 ms at best against 195 in one; 4 MB in 2 pieces as long as in one, in 4 pieces a tenth longer.
constexpr size_t kPieceBytes = size_t{2} << 20;
constexpr size_t kMaxPieces = 16;

// The elements of each piece of an all-reduce of `count` elements of `element` bytes.
size_t piece_elements(size_t count, size_t element) {
  return std::min(kChunk, std::max((count + kMaxPieces - 1) / kMaxPieces, kPieceBytes / element));
}

}  // namespace

bool Communicator::test(uint64_t ticket, const std::string& what) {
  auto it = g_pending.find(ticket);
  if (it == g_pending.end()) return true;
  int done = 0;
  check_mpi(MPI_Testall(static_cast<int>(it->second.size()), it->second.data(), &done, MPI_STATUSES_IGNORE), what);
  if (done) g_pending.erase(it);
  return done != 0;
}

void Communicator::wait(uint64_t ticket, double timeout_seconds, const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  // MPI moves a non-blocking collective on only inside MPI_Test, so test without pause while it runs (as a blocking
  // MPI_Allreduce spins inside MPI). Past a millisecond the others are likely still computing: yield between
  // tests, so that on a machine with fewer cores than processes the worker waited for gets the core; past a
  // second they are busy elsewhere (a slower step, loading data): test less often. (Yielding after 100 us cost a
  // 1 MB all-reduce a tenth of its speed on a loaded machine: bench_distributed.)
  for (;;) {
    if (test(ticket, what)) return;
    const auto now = Clock::now();
    if (now >= deadline) break;
    if (now - start > std::chrono::seconds(1)) std::this_thread::sleep_for(std::chrono::microseconds(200));
    else if (now - start > std::chrono::milliseconds(1)) std::this_thread::yield();
  }
  // The requests cannot be cancelled (MPI forbids it for collectives): their buffers must outlive them, so the
  // caller leaks them, and this worker is done communicating.
  broken_ = true;
  throw DeadlineExceeded(what + ": did not complete within " + seconds_text(timeout_seconds) +
                         " s; another worker has died, hung or stopped calling the same collectives (worker " +
                         std::to_string(rank_) + " of " + std::to_string(size_) +
                         "). The timeout is MultiWorkerMirroredStrategyOptions::timeout_seconds, or the environment variable "
                         "EMBER_COLLECTIVE_TIMEOUT_SECONDS");
}

uint64_t Communicator::start_all_reduce_sum(const void* data, void* result, size_t count, DType dtype,
                                            const std::string& what) {
  check_usable(what);
  EMBER_CHECK(dtype == DType::Float32 || dtype == DType::Float64, InvalidArgument)
      << what << ": all-reduce takes float32 or float64 values, got " << dtype_name(dtype);
  const size_t element = dtype_size(dtype);
  if (size_ == 1 || count == 0) {
    if (count) std::memcpy(result, data, count * element);
    return 0;
  }
  const MPI_Datatype type = dtype == DType::Float32 ? MPI_FLOAT : MPI_DOUBLE;
  std::vector<MPI_Request> requests;
  const size_t piece = piece_elements(count, element);
  for (size_t begin = 0; begin < count; begin += piece) {
    const size_t n = std::min(piece, count - begin);
    MPI_Request request;
    check_mpi(MPI_Iallreduce(static_cast<const char*>(data) + begin * element, static_cast<char*>(result) + begin * element,
                             static_cast<int>(n), type, MPI_SUM, MPI_COMM_WORLD, &request),
              what);
    requests.push_back(request);
  }
  return track(std::move(requests));
}

void Communicator::all_reduce_sum(const void* data, void* result, size_t count, DType dtype, double timeout_seconds,
                                  const std::string& what) {
  wait(start_all_reduce_sum(data, result, count, dtype, what), timeout_seconds, what);
}

void Communicator::broadcast(void* data, size_t bytes, int root, double timeout_seconds, const std::string& what) {
  check_usable(what);
  if (size_ == 1 || bytes == 0) return;
  std::vector<MPI_Request> requests;
  for (size_t begin = 0; begin < bytes; begin += kChunk) {
    const size_t n = std::min(kChunk, bytes - begin);
    MPI_Request request;
    check_mpi(MPI_Ibcast(static_cast<char*>(data) + begin, static_cast<int>(n), MPI_BYTE, root, MPI_COMM_WORLD,
                         &request),
              what);
    requests.push_back(request);
  }
  wait(track(std::move(requests)), timeout_seconds, what);
}

std::vector<uint64_t> Communicator::all_gather(const std::vector<uint64_t>& mine, double timeout_seconds,
                                               const std::string& what) {
  check_usable(what);
  if (size_ == 1) return mine;
  // Leaked with the request if the call times out (see wait).
  auto* out = new std::vector<uint64_t>(mine.size() * static_cast<size_t>(size_));
  auto* in = new std::vector<uint64_t>(mine);
  MPI_Request request;
  check_mpi(MPI_Iallgather(in->data(), static_cast<int>(in->size()), MPI_UINT64_T, out->data(),
                           static_cast<int>(in->size()), MPI_UINT64_T, MPI_COMM_WORLD, &request),
            what);
  wait(track({request}), timeout_seconds, what);
  std::vector<uint64_t> result = std::move(*out);
  delete out;
  delete in;
  return result;
}

double default_timeout_seconds() {
  const char* env = std::getenv("EMBER_COLLECTIVE_TIMEOUT_SECONDS");
  if (!env || !*env) return 600.0;
  char* end = nullptr;
  const double value = std::strtod(env, &end);
  EMBER_CHECK(end && *end == '\0' && value > 0, InvalidArgument)
      << "EMBER_COLLECTIVE_TIMEOUT_SECONDS must be a positive number of seconds, got '" << env << "'";
  return value;
}

}  // namespace ember::distribute::detail
