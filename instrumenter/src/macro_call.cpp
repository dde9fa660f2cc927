// macro_call: where a call written through macros can be wrapped — at the macro
// invocation spelled in the main file, when the call (give or take parentheses and a
// cast) is everything the invocation expands to (docs/instrumenter.md, "Calls behind
// macros").
#include "internal.hpp"

#include <clang/AST/ASTContext.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>
#include <clang/Lex/Lexer.h>

#include <optional>

namespace vprof::instr::detail {
namespace {

using namespace clang;

// The main-file position of the first token of `loc`'s expression: `loc` itself when it is
// written in a file, else the name of the macro invocation in the file whose expansion
// `loc` begins (with nested macros: every invocation up to the one in the file).
std::optional<SourceLocation> file_begin(SourceLocation loc, const SourceManager &sm,
                                         const LangOptions &lo) {
  if (loc.isFileID())
    return loc;
  SourceLocation at;
  if (!Lexer::isAtStartOfMacroExpansion(loc, sm, lo, &at) || !at.isFileID())
    return std::nullopt;
  return at;
}

// Same for the last token: the invocation's last token (the closing parenthesis of a
// function-like macro) when `loc` ends its expansion.
std::optional<SourceLocation> file_end(SourceLocation loc, const SourceManager &sm,
                                       const LangOptions &lo) {
  if (loc.isFileID())
    return loc;
  SourceLocation at;
  if (!Lexer::isAtEndOfMacroExpansion(loc, sm, lo, &at) || !at.isFileID())
    return std::nullopt;
  return at;
}

// Parentheses and casts that change nothing but the type may stand around the call in
// the macro's expansion (`((T *) alloc(n))`): wrapping them times no other code. Casts
// that call a constructor or a conversion function are code of their own.
bool transparent(const Stmt *s) {
  if (isa<ParenExpr, ImplicitCastExpr>(s))
    return true;
  const auto *c = dyn_cast<CStyleCastExpr>(s);
  return c && c->getCastKind() != CK_ConstructorConversion &&
         c->getCastKind() != CK_UserDefinedConversion;
}

// A preprocessor directive inside the text ("\n   #if"): the invocation is split across
// conditional lines, and text wrapped around it could land in another branch.
bool spans_directive(StringRef text) {
  for (std::size_t nl = text.find('\n'); nl != StringRef::npos; nl = text.find('\n', nl + 1)) {
    std::size_t p = text.find_first_not_of(" \t", nl + 1);
    if (p != StringRef::npos && text[p] == '#')
      return true;
  }
  return false;
}

} // namespace

MacroCallSpan macro_call_span(ASTContext &ctx, const Expr *call) {
  const SourceManager &sm = ctx.getSourceManager();
  const LangOptions &lo = ctx.getLangOpts();
  MacroCallSpan out;
  const bool in_argument = sm.isMacroArgExpansion(call->getBeginLoc());
  const Expr *cur = call;
  for (int depth = 0; cur && depth < 8; ++depth) {
    auto b = file_begin(cur->getBeginLoc(), sm, lo);
    auto e = file_end(cur->getEndLoc(), sm, lo);
    if (b && e) {
      if (!sm.isWrittenInMainFile(*b) || sm.getFileID(*b) != sm.getFileID(*e))
        return out; // not this file's text: nothing to say
      SourceLocation after = Lexer::getLocForEndOfToken(*e, 0, sm, lo);
      if (after.isInvalid()) {
        out.refusal = "cannot find the end of the macro invocation";
        return out;
      }
      unsigned bo = sm.getFileOffset(*b), eo = sm.getFileOffset(after);
      if (eo <= bo) {
        out.refusal = "empty macro invocation range";
        return out;
      }
      if (spans_directive(sm.getBufferData(sm.getFileID(*b)).substr(bo, eo - bo))) {
        out.refusal = "macro invocation spans a preprocessor directive";
        return out;
      }
      out.expr = cur;
      out.begin = bo;
      out.end = eo;
      return out;
    }
    auto parents = ctx.getParents(*cur);
    const Expr *up = parents.size() == 1 ? parents[0].get<Expr>() : nullptr;
    cur = up && transparent(up) ? up : nullptr;
  }
  out.refusal =
      in_argument
          ? "call in a macro argument (the macro may expand it more than once, or stringify it)"
          : "macro expansion: the call is only part of what the macro invocation expands to";
  return out;
}

} // namespace vprof::instr::detail
