-- pandoc Lua filter for the manual pages: the pages are made of a man-specific head
-- (docs/man/*.md: NAME, SYNOPSIS, options) followed by the project's own documents
-- (docs/config.md, docs/control-api.md), so that the manuals and docs/ cannot drift.
--   * level-1 headings become upper case (man's section names: .SH NAME);
--   * links between the documents become their text (a manual page has no hyperlinks);
--   * tables become definition lists (below);
--   * the metadata field see-also becomes the last section, SEE ALSO.

local function upper(inlines)
  return pandoc.walk_inline(pandoc.Span(inlines), {
    Str = function(s) return pandoc.Str(pandoc.text.upper(s.text)) end,
    Code = function(c) return pandoc.Code(pandoc.text.upper(c.text)) end,
  }).content
end

function Header(h)
  if h.level == 1 then
    h.content = upper(h.content)
  end
  return h
end

function Link(l)
  if not l.target:match('^%a+:') then
    return l.content
  end
end

-- A table becomes a definition list, the way manual pages document keys: the first column
-- is the term; the other columns but a last "meaning" one follow it as "header: value";
-- the meaning is the definition. Wide reference tables then read at any terminal width.
local function cells(row)
  return row.cells or row[2]
end

local function inlines(cell)
  return pandoc.utils.blocks_to_inlines(cell.contents or cell[5])
end

function Table(t)
  local head = t.head.rows or t.head[2]
  local names = {}
  for i, c in ipairs(cells(head[1])) do
    names[i] = pandoc.utils.stringify(inlines(c))
  end
  local items = pandoc.List()
  for _, body in ipairs(t.bodies) do
    for _, row in ipairs(body.body or body[4]) do
      local cs = cells(row)
      local last = #cs
      if names[last] ~= 'meaning' then
        last = last + 1
      end
      local detail = pandoc.List()
      for i = 2, math.min(last - 1, #cs) do
        if #detail > 0 then
          detail:insert(pandoc.Str(';'))
          detail:insert(pandoc.Space())
        end
        detail:insert(pandoc.Str(names[i] .. ':'))
        detail:insert(pandoc.Space())
        detail:extend(inlines(cs[i]))
      end
      local def = pandoc.List()
      if #detail > 0 then
        def:insert(pandoc.Plain(detail))
      end
      if last <= #cs then
        def:insert(pandoc.Para(inlines(cs[last])))
      end
      items:insert({inlines(cs[1]), {def}})
    end
  end
  return pandoc.DefinitionList(items)
end

function Pandoc(doc)
  local see = doc.meta['see-also']
  if see then
    doc.blocks:insert(pandoc.Header(1, {pandoc.Str('SEE ALSO')}))
    doc.blocks:insert(pandoc.Para(see))
    doc.meta['see-also'] = nil
  end
  return doc
end
