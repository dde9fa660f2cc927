// Addresses into frames with LLVM's symbolizer (symbols.hpp).
#include "vprof/symbols.hpp"

#include <llvm/DebugInfo/Symbolize/Symbolize.h>
#include <llvm/Demangle/Demangle.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>

#include <algorithm>
#include <cstdlib>
#include <map>

namespace vprof::symbols {

std::string function_name(const std::string &symbol) {
  if (symbol.empty() || symbol == "<invalid>")
    return "";
  if (symbol.rfind("_Z", 0) != 0)
    return symbol;
  llvm::ItaniumPartialDemangler d;
  if (d.partialDemangle(symbol.c_str()))
    return symbol; // not a name the demangler knows: keep it as it is
  std::size_t n = 0;
  char *name = d.isFunction() ? d.getFunctionName(nullptr, &n) : d.finishDemangle(nullptr, &n);
  std::string out = name ? std::string(name) : symbol;
  std::free(name);
  return out;
}

namespace {

// The load segments of one object: file offset ranges and their virtual addresses.
struct Segment {
  std::uint64_t offset = 0, filesz = 0, vaddr = 0;
};

template <class ELFT>
std::vector<Segment> load_segments(const llvm::object::ELFObjectFile<ELFT> &elf) {
  std::vector<Segment> out;
  auto headers = elf.getELFFile().program_headers();
  if (!headers) {
    llvm::consumeError(headers.takeError());
    return out;
  }
  for (const auto &ph : *headers)
    if (ph.p_type == llvm::ELF::PT_LOAD)
      out.push_back({ph.p_offset, ph.p_filesz, ph.p_vaddr});
  return out;
}

std::vector<Segment> segments_of(const std::string &path) {
  auto binary = llvm::object::ObjectFile::createObjectFile(path);
  if (!binary) {
    llvm::consumeError(binary.takeError());
    return {};
  }
  const llvm::object::ObjectFile *obj = binary->getBinary();
  using namespace llvm::object;
  if (const auto *e = llvm::dyn_cast<ELF64LEObjectFile>(obj))
    return load_segments(*e);
  if (const auto *e = llvm::dyn_cast<ELF32LEObjectFile>(obj))
    return load_segments(*e);
  if (const auto *e = llvm::dyn_cast<ELF64BEObjectFile>(obj))
    return load_segments(*e);
  if (const auto *e = llvm::dyn_cast<ELF32BEObjectFile>(obj))
    return load_segments(*e);
  return {};
}

// A mapped path as a file to open: "/lib/x.so (deleted)" is gone; "[vdso]" and anonymous
// mappings are no files.
bool is_object_path(const std::string &path) {
  return !path.empty() && path[0] == '/' && path.find(" (deleted)") == std::string::npos;
}

} // namespace

struct Symbolizer::Impl {
  llvm::symbolize::LLVMSymbolizer llvm;
  std::map<std::string, std::vector<Segment>> segments; // per object, read once

  static llvm::symbolize::LLVMSymbolizer::Options options() {
    llvm::symbolize::LLVMSymbolizer::Options o;
    o.PrintFunctions = llvm::symbolize::FunctionNameKind::LinkageName;
    o.Demangle = false; // function_name() demangles to the qualified name alone
    o.UseSymbolTable = true;
    o.RelativeAddresses = false;
    return o;
  }
  Impl() : llvm(options()) {}

  const std::vector<Segment> &segments_for(const std::string &path) {
    auto it = segments.find(path);
    if (it == segments.end())
      it = segments.emplace(path, segments_of(path)).first;
    return it->second;
  }
};

Symbolizer::Symbolizer() : impl_(std::make_unique<Impl>()) {}
Symbolizer::~Symbolizer() = default;

std::optional<std::uint64_t> Symbolizer::object_address(const Mapping &m, std::uint64_t address) {
  if (!is_object_path(m.path) || address < m.start || address >= m.end)
    return std::nullopt;
  const std::uint64_t file_offset = address - m.start + m.offset;
  for (const Segment &s : impl_->segments_for(m.path))
    if (file_offset >= s.offset && file_offset < s.offset + s.filesz)
      return file_offset - s.offset + s.vaddr;
  return std::nullopt;
}

std::vector<Frame> Symbolizer::frames(const std::vector<Mapping> &maps, std::uint64_t address,
                                      bool return_address) {
  const std::uint64_t at = return_address && address > 0 ? address - 1 : address;
  const Mapping *m = mapping_of(maps, at);
  if (!m)
    return {};
  const auto in_object = object_address(*m, at);
  if (!in_object)
    return {};
  auto info = impl_->llvm.symbolizeInlinedCode(
      m->path, {*in_object, llvm::object::SectionedAddress::UndefSection});
  std::vector<Frame> out;
  if (!info) {
    llvm::consumeError(info.takeError());
    out.push_back({"", "", 0, m->path, false});
    return out;
  }
  const std::uint32_t n = info->getNumberOfFrames();
  for (std::uint32_t i = 0; i < n; ++i) {
    const llvm::DILineInfo &li = info->getFrame(i);
    Frame f;
    f.function = function_name(li.FunctionName);
    f.file = li.FileName == llvm::DILineInfo::BadString ? "" : li.FileName;
    f.line = li.Line;
    f.object = m->path;
    f.inlined = i + 1 < n;
    out.push_back(std::move(f));
  }
  if (out.empty())
    out.push_back({"", "", 0, m->path, false});
  return out;
}

} // namespace vprof::symbols
